package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/lease"
	"cairn.dev/cairn/server/servertest"
)

// A term is valid while renewed within the renew deadline, by the
// holder's own clock, and expired after, whatever its context says (a
// context without its cancellation stands for a process resumed before
// its renewal goroutine ran).
func TestValid_ExpiresWithTheRenewDeadlineByTheLocalClock(t *testing.T) {
	s := servertest.Start(t)
	leads := make(chan context.Context, 1)
	a := run(t, s, lease.Options{Duration: 10 * time.Second, RetryPeriod: time.Second}, "a", func(ctx context.Context) {
		select {
		case leads <- ctx:
		default:
		}
		<-ctx.Done()
	})
	ctx := <-leads
	stale := context.WithoutCancel(ctx)
	if err := lease.Valid(stale); err != nil && ctx.Err() == nil {
		t.Fatalf("Valid while leading: %v", err)
	}
	a.net.hang.Store(true) // no renewal is confirmed from now on
	testkit.Eventually(t, 30*time.Second, "the term to expire by a's clock", func() bool {
		return errors.Is(lease.Valid(stale), lease.ErrExpired)
	})
	if err := lease.Valid(context.Background()); err != nil {
		t.Fatalf("Valid outside a term: %v, want nil", err)
	}
}

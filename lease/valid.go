package lease

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrExpired is returned by Valid for the context of a term whose last
// confirmed renewal is older than RenewDeadline by this process's
// monotonic clock: the term may already be another candidate's.
var ErrExpired = errors.New("lease: the term expired (no renewal confirmed within the renew deadline)")

// validity is what Valid reads of a term: when its last confirmed renewal
// started (monotonic clock) and how long that keeps it valid. The
// elector's renewal goroutine stores; any goroutine loads.
type validity struct {
	renewed  atomic.Pointer[time.Time]
	deadline time.Duration
}

type validityKey struct{}

// withValidity returns ctx carrying v, for Valid.
func withValidity(ctx context.Context, v *validity) context.Context {
	return context.WithValue(ctx, validityKey{}, v)
}

// renewedAt records a confirmed renewal that started at start.
func (v *validity) renewedAt(start time.Time) { v.renewed.Store(&start) }

// Valid reports whether the term whose lead context ctx is (or derives
// from) is still valid by this process's own monotonic clock: renewed
// within RenewDeadline, and its context not done. It does not wait for the
// renewal goroutine, which may not have run yet (a process resumed after
// SIGSTOP sees its deadline passed here first). Call it right before a side
// effect outside the store (starting a process): writes carry the fence
// instead. It never blocks. Errors: ErrExpired, or ctx's error; nil for a
// context of no term (no election: nothing to check).
func Valid(ctx context.Context) error {
	v, _ := ctx.Value(validityKey{}).(*validity)
	if v == nil {
		return ctx.Err()
	}
	if since := time.Since(*v.renewed.Load()); since >= v.deadline {
		return fmt.Errorf("%w: last renewal %s ago, renew deadline %s", ErrExpired, since.Round(time.Millisecond), v.deadline)
	}
	return ctx.Err()
}

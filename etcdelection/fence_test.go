package etcdelection_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn.dev/cairn/etcdelection"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/store/storetest"
)

// A leader whose election key is gone (its lease revoked, another process
// elected) has its guarded write refused, though its own clock still
// says its term is valid: the compaction it guards does not happen.
func TestGuard_RefusedOnceTheElectionIsAnothers(t *testing.T) {
	s, _ := storetest.Start(t)
	cli := s.Client()
	ctx := context.Background()
	leads := make(chan context.Context, 2)
	run := func(who string) {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			// A long TTL: the local clock never expires the term in this
			// test, only etcd's transaction can refuse.
			_ = etcdelection.Run(rctx, cli, etcdelection.Options{Name: "compactor", Identity: who, TTL: 30 * time.Second},
				func(lctx context.Context) {
					leads <- lctx
					<-lctx.Done()
				})
		}()
		t.Cleanup(func() { cancel(); <-done })
	}
	run("a")
	a := <-leads
	if err := etcdelection.Guard(a, "100"); err != nil {
		t.Fatalf("the leader's guard: %v", err)
	}
	if got := value(t, cli); got != "100" {
		t.Fatalf("guarded value %q, want 100", got)
	}
	stale := context.WithoutCancel(a) // the term's values, as a paused leader still holds them
	run("b")
	resp, err := cli.Get(ctx, etcdelection.Prefix+"compactor/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("election key: %v", err)
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	b := <-leads
	testkit.Eventually(t, 15*time.Second, "b holds the election", func() bool {
		id, _ := etcdelection.Current(ctx, cli, "compactor")
		return id == "b"
	})
	if err := etcdelection.Guard(stale, "200"); !errors.Is(err, etcdelection.ErrNotLeader) {
		t.Fatalf("the old leader's guard: %v, want ErrNotLeader", err)
	}
	if got := value(t, cli); got != "100" {
		t.Fatalf("guarded value %q after a refused guard, want 100", got)
	}
	if err := etcdelection.Guard(b, "300"); err != nil || value(t, cli) != "300" {
		t.Fatalf("the new leader's guard: %v", err)
	}
	if err := etcdelection.Guard(ctx, "400"); !errors.Is(err, etcdelection.ErrNoTerm) {
		t.Fatalf("a guard outside a term: %v, want ErrNoTerm", err)
	}
}

func value(t *testing.T, cli *clientv3.Client) string {
	t.Helper()
	resp, err := cli.Get(context.Background(), etcdelection.FencePrefix+"compactor")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

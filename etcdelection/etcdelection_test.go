package etcdelection_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn.dev/cairn/etcdelection"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/store/storetest"
)

// TestRun_ExactlyOneLeadsAndTheOtherTakesOver runs two campaigners on one
// etcd: only one leads at a time, and when it stops the other is elected.
func TestRun_ExactlyOneLeadsAndTheOtherTakesOver(t *testing.T) {
	s, _ := storetest.Start(t)
	var leading, maxLeading atomic.Int32
	var leaders [2]atomic.Bool
	ctxs := make([]context.CancelFunc, 2)
	dones := make([]chan struct{}, 2)
	for i := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		ctxs[i], dones[i] = cancel, make(chan struct{})
		go func() {
			defer close(dones[i])
			_ = etcdelection.Run(ctx, s.Client(), etcdelection.Options{Name: "test", Identity: []string{"a", "b"}[i], TTL: 2 * time.Second},
				func(lctx context.Context) {
					n := leading.Add(1)
					for {
						m := maxLeading.Load()
						if n <= m || maxLeading.CompareAndSwap(m, n) {
							break
						}
					}
					leaders[i].Store(true)
					<-lctx.Done()
					leaders[i].Store(false)
					leading.Add(-1)
				})
		}()
	}
	t.Cleanup(func() {
		for i := range 2 {
			ctxs[i]()
			<-dones[i]
		}
	})
	first := waitLeader(t, &leaders)
	id, err := etcdelection.Current(context.Background(), s.Client(), "test")
	if err != nil || id != []string{"a", "b"}[first] {
		t.Fatalf("current leader %q (err %v), want %d", id, err, first)
	}
	ctxs[first]()
	<-dones[first]
	second := waitLeader(t, &leaders)
	if second == first {
		t.Fatalf("the stopped process still leads")
	}
	if maxLeading.Load() != 1 {
		t.Fatalf("%d processes led at once", maxLeading.Load())
	}
}

func waitLeader(t *testing.T, leaders *[2]atomic.Bool) int {
	t.Helper()
	who := -1
	testkit.Eventually(t, 15*time.Second, "a leader", func() bool {
		for i := range leaders {
			if leaders[i].Load() {
				who = i
				return true
			}
		}
		return false
	})
	return who
}

// TestRun_CampaignEndingOnAnExpiredLeaseDoesNotLead: b waits behind a; b's
// lease expires (revoked here, as an outage longer than the TTL does),
// then a steps down. etcd's Campaign returns success to b, whose own key
// is gone: b must not lead on it, but campaign again with a new lease and
// lead on that one. Every lead call must find its own key first in line,
// held by a live lease.
func TestRun_CampaignEndingOnAnExpiredLeaseDoesNotLead(t *testing.T) {
	s, _ := storetest.Start(t)
	cli := s.Client()
	prefix := etcdelection.Prefix + "expired/"
	var bad, leads atomic.Int32
	check := func(who string) func(context.Context) {
		return func(lctx context.Context) {
			leads.Add(1)
			resp, err := cli.Get(context.Background(), prefix, clientv3.WithFirstCreate()...)
			if err != nil || len(resp.Kvs) == 0 || string(resp.Kvs[0].Value) != who {
				bad.Add(1)
				t.Errorf("%s leads, but the first key in line is not its own (%v)", who, err)
			} else if ttl, err := cli.TimeToLive(context.Background(), clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil || ttl.TTL <= 0 {
				bad.Add(1)
				t.Errorf("%s leads on an expired lease (%v)", who, err)
			}
			<-lctx.Done()
		}
	}
	run := func(who string) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = etcdelection.Run(ctx, cli, etcdelection.Options{Name: "expired", Identity: who, TTL: 2 * time.Second}, check(who))
		}()
		stop = func() { cancel(); <-done }
		t.Cleanup(stop)
		return stop
	}
	stopA := run("a")
	testkit.Eventually(t, 15*time.Second, "a leads", func() bool { return leads.Load() == 1 })
	run("b")
	var bLease clientv3.LeaseID
	testkit.Eventually(t, 15*time.Second, "b campaigns", func() bool {
		resp, err := cli.Get(context.Background(), prefix, clientv3.WithPrefix())
		if err != nil {
			return false
		}
		for _, kv := range resp.Kvs {
			if string(kv.Value) == "b" {
				bLease = clientv3.LeaseID(kv.Lease)
				return true
			}
		}
		return false
	})
	if _, err := cli.Revoke(context.Background(), bLease); err != nil {
		t.Fatal(err)
	}
	stopA()
	testkit.Eventually(t, 15*time.Second, "b leads on a new lease", func() bool { return leads.Load() == 2 })
	if bad.Load() > 0 {
		t.Fatal("a process led without a live lease holding the first key")
	}
}

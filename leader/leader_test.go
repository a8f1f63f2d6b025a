package leader_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/leader"
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
			_ = leader.Run(ctx, s.Client(), leader.Options{Name: "test", Identity: []string{"a", "b"}[i], TTL: 2 * time.Second},
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
	id, err := leader.Current(context.Background(), s.Client(), "test")
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

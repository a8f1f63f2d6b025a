package lease_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/lease"
	"cairn.dev/cairn/server/servertest"
)

// fences records the fence of every term of one election, by candidate.
type fences struct {
	mu sync.Mutex
	by map[string][]api.Fence
}

func (r *fences) lead(who string) func(ctx context.Context, f api.Fence) {
	return func(ctx context.Context, f api.Fence) {
		r.mu.Lock()
		if r.by == nil {
			r.by = map[string][]api.Fence{}
		}
		r.by[who] = append(r.by[who], f)
		r.mu.Unlock()
		<-ctx.Done()
	}
}

func (r *fences) of(who string) []api.Fence {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]api.Fence(nil), r.by[who]...)
}

// runFenced starts a candidate like run, with a lead that records fences.
func runFenced(t *testing.T, s *servertest.Server, opts lease.Options, who string, lead func(context.Context, api.Fence)) *candidate {
	t.Helper()
	c, tr := newClient(t, s)
	opts.Name = "controllers"
	opts.Identity = "http://" + who + ".test:7070"
	ctx, cancel := context.WithCancel(context.Background())
	cand := &candidate{identity: opts.Identity, net: tr, cancel: cancel, done: make(chan error, 1)}
	go func() { cand.done <- lease.Run(ctx, c, opts, lead) }()
	t.Cleanup(func() {
		if err := cand.stop(t); err != nil {
			t.Errorf("%s: Run: %v", who, err)
		}
	})
	return cand
}

func TestRun_StaleLeadersFencedWritesAreRefusedOverHTTP(t *testing.T) {
	s := servertest.Start(t)
	var rec fences
	opts := fast()
	a := runFenced(t, s, opts, "a", rec.lead("a"))
	testkit.Eventually(t, 10*time.Second, "a leads", func() bool { return len(rec.of("a")) == 1 })
	fa := rec.of("a")[0]
	c, _ := newClient(t, s)
	l, err := client.For[*api.Lease](c).Get(context.Background(), "", "controllers")
	if err != nil {
		t.Fatal(err)
	}
	if want := (api.Fence{Lease: "controllers", UID: l.UID, Holder: a.identity, Term: l.Spec.LeaseTransitions}); fa != want {
		t.Fatalf("a's fence %+v, want %+v (the Lease's term)", fa, want)
	}
	var lost []error
	stale := client.Fenced(c, fa, func(err error) { lost = append(lost, err) })
	if _, err := stale.Create(context.Background(), testkit.Secret("default", "while-leading", nil)); err != nil {
		t.Fatalf("a's fenced write while it leads: %v", err)
	}

	// a is cut off; b takes over. a's fence, as a paused leader that wakes
	// up would use it, no longer lets a write through.
	b := runFenced(t, s, opts, "b", rec.lead("b"))
	a.net.hang.Store(true)
	testkit.Eventually(t, 20*time.Second, "b leads", func() bool { return len(rec.of("b")) == 1 })
	_, err = stale.Create(context.Background(), testkit.Secret("default", "stale", nil))
	if !api.IsNotLeader(err) || !strings.Contains(err.Error(), "held by "+b.identity) {
		t.Fatalf("a's fenced write after b took over: %v, want NotLeader naming b", err)
	}
	if _, err := stale.Update(context.Background(), testkit.Secret("default", "while-leading", nil)); !api.IsNotLeader(err) {
		t.Fatalf("a's next write: %v, want the same NotLeader at once", err)
	}
	if len(lost) != 1 {
		t.Fatalf("lost called %d times, want once", len(lost))
	}
	if _, err := c.Get(context.Background(), api.KindSecret, "default", "stale"); err == nil {
		t.Fatal("the stale leader's create was written")
	}
	fresh := client.Fenced(c, rec.of("b")[0], nil)
	if _, err := fresh.Create(context.Background(), testkit.Secret("default", "new-leader", nil)); err != nil {
		t.Fatalf("b's fenced write: %v", err)
	}
}

func TestRun_AcquisitionConfirmedLateDoesNotLead(t *testing.T) {
	s := servertest.Start(t)
	var rec fences
	opts := fast() // renew deadline 1.33s, retry period 200ms
	c, tr := newClient(t, s)
	opts.Name, opts.Identity = "controllers", "http://slow.test:7070"
	opts.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	// Every write is answered 1.2s after the server made it: acquisitions
	// succeed, but too late to lead on.
	tr.slowWrites.Store(int64(1200 * time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- lease.Run(ctx, c, opts, rec.lead("slow")) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	testkit.Eventually(t, 20*time.Second, "the slow candidate to acquire the Lease", func() bool {
		h, err := lease.Current(context.Background(), s.Client(t), "controllers")
		return err == nil && h == opts.Identity
	})
	time.Sleep(3 * opts.Duration)
	if n := len(rec.of("slow")); n != 0 {
		t.Fatalf("led %d times on acquisitions confirmed too late", n)
	}
	tr.slowWrites.Store(0)
	testkit.Eventually(t, 20*time.Second, "the candidate leads once its writes are answered in time", func() bool {
		return len(rec.of("slow")) > 0
	})
}

package lease_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/lease"
	"cairn.dev/cairn/server/servertest"
)

// fast are the options of most tests: a lease of two seconds.
func fast() lease.Options {
	return lease.Options{Duration: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}
}

func TestRun_OneCandidateLeadsAndASkewedClockInvitesNoTakeover(t *testing.T) {
	s := servertest.Start(t)
	for _, tc := range []struct {
		name string
		skew time.Duration // of the leader's clock
	}{
		{name: "same clocks"},
		{name: "leader clock an hour behind", skew: -time.Hour},
		{name: "leader clock an hour ahead", skew: time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rec terms
			// A longer lease than fast's: this test asserts a single term
			// for several lease durations, which a renewal delayed past a
			// 2 s lease's deadline by a loaded machine would break.
			opts := fast()
			opts.Duration = 5 * time.Second
			opts.Name = "skew" + tc.skew.String()
			skewed := opts
			skewed.Now = func() time.Time { return time.Now().Add(tc.skew) }
			run(t, s, skewed, "a", rec.lead("a", false))
			testkit.Eventually(t, 10*time.Second, "a leads", func() bool { return rec.leader() == "a" })
			b := run(t, s, opts, "b", rec.lead("b", false))

			// b watches a renew for several lease durations and never takes over.
			b.awaitRequests(t, looks(opts, 3*opts.Duration), "b to read the lease over three lease durations")
			if ps := rec.snapshot(); len(ps) != 1 || ps[0].who != "a" || !ps[0].stop.IsZero() {
				t.Fatalf("terms %+v, want a single one of a, still running", ps)
			}
			c, _ := newClient(t, s)
			l, err := client.For[*api.Lease](c).Get(context.Background(), "", opts.Name)
			if err != nil {
				t.Fatal(err)
			}
			if l.Spec.HolderIdentity != "http://a.test:7070" || l.Spec.LeaseDurationSeconds != 5 {
				t.Errorf("lease spec %+v, want a holding it for 5s", l.Spec)
			}
			if got, want := l.Spec.RenewTime.Sub(time.Now()).Round(time.Hour), tc.skew; got != want {
				t.Errorf("renewTime off the reader's clock by %s, want the leader's skew %s", got, want)
			}
		})
	}
}

func TestRun_StoppedLeaderReleasesAndAnotherTakesOverWithoutWaitingForExpiry(t *testing.T) {
	s := servertest.Start(t)
	var rec terms
	// A lease so long that the test would time out if b waited for it.
	opts := lease.Options{Duration: time.Minute, RetryPeriod: 200 * time.Millisecond}
	a := run(t, s, opts, "a", rec.lead("a", false))
	testkit.Eventually(t, 10*time.Second, "a leads", func() bool { return rec.leader() == "a" })
	b := run(t, s, opts, "b", rec.lead("b", false))
	b.awaitRequests(t, 1, "b to see a hold the lease")

	if err := a.stop(t); err != nil {
		t.Fatalf("a: Run: %v", err)
	}
	if ps := rec.snapshot(); ps[0].stop.IsZero() {
		t.Fatal("a's Run returned while a was still leading")
	}
	c, _ := newClient(t, s)
	l, err := client.For[*api.Lease](c).Get(context.Background(), "", "controllers")
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == a.identity {
		t.Fatalf("a stopped and still holds the lease: %+v", l.Spec)
	}
	testkit.Eventually(t, 20*time.Second, "b leads", func() bool { return rec.leader() == "b" })
	rec.assertNoOverlap(t)
}

func TestRun_HungLeaderStopsBeforeAnotherTakesOver(t *testing.T) {
	s := servertest.Start(t)
	var rec terms
	opts := fast()
	a := run(t, s, opts, "a", rec.lead("a", false))
	testkit.Eventually(t, 10*time.Second, "a leads", func() bool { return rec.leader() == "a" })
	b := run(t, s, opts, "b", rec.lead("b", false))
	b.awaitRequests(t, 5, "b to see a renew") // over two retry periods, a's renewal period

	a.net.hang.Store(true) // a can no longer renew, nor release
	testkit.Eventually(t, 20*time.Second, "b leads", func() bool { return rec.leader() == "b" })
	ps := rec.snapshot()
	if len(ps) != 2 || ps[0].who != "a" || ps[0].stop.IsZero() {
		t.Fatalf("terms %+v, want a's (ended), then b's", ps)
	}
	rec.assertNoOverlap(t)
	if !a.running() {
		t.Fatal("a's Run returned; it should go on campaigning")
	}

	// a's network heals: it sees b renewing and stays a follower.
	a.net.hang.Store(false)
	a.awaitRequests(t, looks(opts, 2*opts.Duration), "a to read the lease over two lease durations")
	if n := rec.count("a"); n != 1 || rec.leader() != "b" {
		t.Fatalf("after a's network healed: terms %+v, want b still leading", rec.snapshot())
	}
	rec.assertNoOverlap(t)
}

func TestRun_ReturningLeadEndsTheTermAndAnotherTakesOver(t *testing.T) {
	s := servertest.Start(t)
	var rec terms
	opts := fast()
	a := run(t, s, opts, "a", rec.lead("a", true)) // a failing controller: every term ends at once
	testkit.Eventually(t, 10*time.Second, "a has led", func() bool { return rec.count("a") >= 1 })
	run(t, s, opts, "b", rec.lead("b", false))

	testkit.Eventually(t, 20*time.Second, "b leads", func() bool { return rec.leader() == "b" })
	a.awaitRequests(t, looks(opts, 2*opts.Duration), "a to read the lease over two lease durations")
	if rec.leader() != "b" || rec.count("b") != 1 {
		t.Fatalf("terms %+v, want b leading since it took over", rec.snapshot())
	}
	rec.assertNoOverlap(t)
}

func TestCurrent_NamesTheHolderAndNobodyAfterRelease(t *testing.T) {
	s := servertest.Start(t)
	c, _ := newClient(t, s)
	ctx := context.Background()
	current := func() string {
		t.Helper()
		h, err := lease.Current(ctx, c, "controllers")
		if err != nil {
			t.Fatalf("Current: %v", err)
		}
		return h
	}
	if h := current(); h != "" {
		t.Fatalf("Current before any election = %q, want \"\"", h)
	}
	var rec terms
	a := run(t, s, fast(), "a", rec.lead("a", false))
	testkit.Eventually(t, 10*time.Second, "a leads", func() bool { return rec.leader() == "a" })
	if h := current(); h != a.identity {
		t.Fatalf("Current while a leads = %q, want %q", h, a.identity)
	}
	if err := a.stop(t); err != nil {
		t.Fatal(err)
	}
	if h := current(); h != "" {
		t.Fatalf("Current after a released = %q, want \"\"", h)
	}
}

func TestRun_RejectsUnsafeOptions(t *testing.T) {
	c, err := client.NewHTTP(client.Config{Server: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	ok := lease.Options{Name: "controllers", Identity: "http://a.test"}
	for _, tc := range []struct {
		name   string
		change func(o *lease.Options)
	}{
		{"no name", func(o *lease.Options) { o.Name = "" }},
		{"no identity", func(o *lease.Options) { o.Identity = "" }},
		{"identity over 1 KiB", func(o *lease.Options) { o.Identity = "http://" + strings.Repeat("a", 1024) }},
		{"negative duration", func(o *lease.Options) { o.Duration = -time.Second }},
		{"renew deadline not below the duration", func(o *lease.Options) { o.Duration, o.RenewDeadline = 2*time.Second, 2*time.Second }},
		{"retry period not below the renew deadline", func(o *lease.Options) { o.RenewDeadline, o.RetryPeriod = time.Second, time.Second }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := ok
			tc.change(&opts)
			err := lease.Run(context.Background(), c, opts, func(context.Context, api.Fence) { t.Error("lead called") })
			if !errors.Is(err, lease.ErrInvalidOptions) {
				t.Fatalf("Run = %v, want ErrInvalidOptions", err)
			}
		})
	}
}

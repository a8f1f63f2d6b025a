package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cleaner"
	"cairn.dev/cairn/cleaner/condition"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/server/servertest"
)

// BenchmarkCleanerSchedule1M: 1,000,000 Cleaners pushed onto the
// evaluation schedule (random times within an hour), then popped in time
// order; the time of each phase and the heap the schedule holds.
func BenchmarkCleanerSchedule1M(b *testing.B) {
	const n = 1_000_000
	keys := make([]string, n)
	ats := make([]time.Time, n)
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Now()
	for i := range n {
		keys[i] = fmt.Sprintf("ns-%d/cleaner-%d", i%100, i)
		ats[i] = base.Add(time.Duration(rng.Int64N(int64(time.Hour))))
	}
	for range b.N {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		s := cleaner.NewSchedule()
		start := time.Now()
		for i := range n {
			s.Set(keys[i], ats[i])
		}
		push := time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&m1)
		start = time.Now()
		popped := 0
		for {
			ks := s.PopDue(base.Add(2*time.Hour), 4096)
			if len(ks) == 0 {
				break
			}
			popped += len(ks)
		}
		pop := time.Since(start)
		if popped != n || s.Len() != 0 {
			b.Fatalf("popped %d of %d, %d left", popped, n, s.Len())
		}
		b.ReportMetric(push.Seconds()*1000, "push-ms")
		b.ReportMetric(pop.Seconds()*1000, "pop-ms")
		b.ReportMetric(float64(push.Nanoseconds())/n, "ns/push")
		b.ReportMetric(float64(pop.Nanoseconds())/n, "ns/pop")
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/(1<<20), "heap-MiB")
		runtime.KeepAlive(s)
	}
}

// benchInstallation is a preview's Installation as the informer caches
// hold it: labels, a spec and a status of a realistic size.
func benchInstallation(name string) *api.Object {
	o := testkit.Object(api.KindInstallation, "default", name, testkit.Labels("preview", "open", "team", "web"),
		testkit.Spec(`{"blueprint":{"ref":"preview"},"imports":{"data":[{"name":"branch","value":"feature-x"},{"name":"replicas","value":2}]}}`),
		testkit.Status(`{"phase":"Succeeded","observedGeneration":1,"executionRef":"`+name+`"}`))
	o.UID, o.ResourceVersion, o.Generation, o.CreationTimestamp = "uid-"+name, "42", 1, time.Now()
	return o
}

// oneSource serves one object whatever is asked.
type oneSource struct{ o *api.Object }

func (s oneSource) Get(string, string, string) (*api.Object, bool, error) { return s.o, true, nil }
func (s oneSource) LastChange(_ string, o *api.Object) time.Time {
	return cleaner.LastChangeTime(o, time.Time{}, time.Time{})
}

func (s oneSource) Select(string, string, map[string]string) ([]*api.Object, error) {
	return []*api.Object{s.o}, nil
}

// BenchmarkCleanerEvaluate: the controller's evaluation path without the
// store: resolve one target from a cache (the object turned into its CEL
// value) and decide (evaluate one condition), on every core.
func BenchmarkCleanerEvaluate(b *testing.B) {
	cl := &api.Cleaner{ObjectMeta: api.ObjectMeta{Name: "c", Namespace: "default", Generation: 1, CreationTimestamp: time.Now()},
		Spec: api.CleanerSpec{Retry: api.CleanerRetry{Period: api.Duration{Duration: time.Hour}},
			Targets:    []api.CleanerTarget{{Name: "inst", Reference: api.TargetReference{Kind: api.KindInstallation, Name: "preview-1"}}},
			Conditions: []string{`inst.metadata.labels["preview"] == "closed"`}}}
	set, issues, err := condition.Compile([]string{"inst"}, cl.Spec.Conditions)
	if err != nil || issues != nil {
		b.Fatal(issues, err)
	}
	src := oneSource{benchInstallation("preview-1")}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			d := cleaner.Decide(ctx, cleaner.Input{Now: time.Now(), Cleaner: cl, Programs: set,
				Resolve: func() (cleaner.Resolution, error) { return cleaner.Resolve(cl, src) }})
			if d.Action != cleaner.ActRetry || d.LastError != nil {
				b.Errorf("decision %s, %v", d.Action, d.LastError)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "evaluations/s")
}

// countStatus counts the Cleaner status writes that succeed, one by one
// or in batches (it is a client.StatusBatcher when its client is).
type countStatus struct {
	client.Interface
	n, batches atomic.Int64
}

func (c *countStatus) UpdateStatuses(ctx context.Context, objs []*api.Object) []client.StatusResult {
	c.batches.Add(1)
	rs := client.UpdateStatuses(ctx, c.Interface, objs)
	for i, r := range rs {
		if r.Err == nil && objs[i].Kind == api.KindCleaner {
			c.n.Add(1)
		}
	}
	return rs
}

func (c *countStatus) UpdateStatus(ctx context.Context, obj *api.Object) (*api.Object, error) {
	out, err := c.Interface.UpdateStatus(ctx, obj)
	if err == nil && obj.Kind == api.KindCleaner {
		c.n.Add(1)
	}
	return out, err
}

// BenchmarkCleaners100k: 100,000 Cleaners (CAIRN_BENCH_CLEANERS to change
// the count) created while no controller runs, each with a TTL that has
// passed by the time the controller starts and one condition over one
// target (an Installation; 100 per namespace, shared) that is false. From the
// controller's start: every Cleaner restored (the first list, each
// Cleaner indexed and queued), evaluated (targets resolved from the
// informers, the condition run, the next evaluation scheduled) and its
// status (Pending, next evaluation) written behind the evaluations through
// the in-process client to the embedded etcd, several to a transaction.
// Reports the time to restore; evaluations/s, from the end of the restore
// to the last evaluation; the times from the start until every Cleaner is
// evaluated and until every status is written (handled); and how many
// statuses a batch held on average. CAIRN_BENCH_CPUPROFILE names a file
// for a CPU profile of the controller's phase alone.
func BenchmarkCleaners100k(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("CAIRN_BENCH_CLEANERS")); err == nil && v > 0 {
		n = v
	}
	// A namespace holds at most 50,000 objects by default: the Cleaners
	// spread over four, each with its 100 targets.
	const targets, namespaces = 100, 4
	nsOf := func(k int) string { return fmt.Sprintf("cleaners-%d", k%namespaces) }
	for range b.N {
		ts := servertest.Start(b)
		c := local.New(ts.Registry, identity.System())
		ctx := context.Background()
		for n := range namespaces {
			if _, err := c.Create(ctx, testkit.Object(api.KindNamespace, "", nsOf(n))); err != nil {
				b.Fatal(err)
			}
			for i := range targets {
				o := benchInstallation(fmt.Sprintf("preview-%d", i))
				o.Namespace, o.UID, o.ResourceVersion, o.CreationTimestamp = nsOf(n), "", "", time.Time{}
				o.SetField(api.FieldStatus, nil)
				if _, err := c.Create(ctx, o); err != nil {
					b.Fatal(err)
				}
			}
		}
		cleaners := client.For[*api.Cleaner](c)
		created := time.Now()
		concurrently(b, 32, n/32+1, func(w, i int) error {
			k := w*(n/32+1) + i
			if k >= n {
				return nil
			}
			_, err := cleaners.Create(ctx, &api.Cleaner{ObjectMeta: api.ObjectMeta{Name: fmt.Sprintf("c-%d", k), Namespace: nsOf(k)},
				Spec: api.CleanerSpec{TTL: api.Duration{Duration: time.Second}, Retry: api.CleanerRetry{Period: api.Duration{Duration: time.Hour}},
					Targets: []api.CleanerTarget{{Name: "inst", Reference: api.TargetReference{Kind: api.KindInstallation,
						Name: fmt.Sprintf("preview-%d", k%targets)}}},
					Conditions: []string{`inst.metadata.labels["preview"] == "closed"`}}})
			return err
		})
		b.Logf("%d cleaners created in %s", n, time.Since(created).Round(time.Millisecond))
		testkit.Eventually(b, time.Minute, "every TTL passed", func() bool { return time.Since(created) > 2*time.Second })

		counter := &countStatus{Interface: c}
		// A manager's term commits the status writes together.
		ctl := cleaner.New(cleaner.Options{Workers: 64})
		m, err := manager.New(manager.Options{Client: counter, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Controllers: []manager.Controller{{Name: "cleaner", Setup: ctl.Setup}}})
		if err != nil {
			b.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		stopProfile := profileController(b)
		start := time.Now()
		go func() { done <- m.Run(rctx) }()
		testkit.Eventually(b, 10*time.Minute, "every cleaner restored", ctl.Restored)
		restored := time.Since(start)
		// An evaluated Cleaner is scheduled again (its condition is false).
		testkit.Eventually(b, 10*time.Minute, "every cleaner evaluated", func() bool { return ctl.Schedule().Len() >= n })
		evaluated := time.Since(start)
		testkit.Eventually(b, 10*time.Minute, "every status written", func() bool { return counter.n.Load() >= int64(n) })
		elapsed := time.Since(start)
		stopProfile()
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		if got := ctl.Schedule().Len(); got != n {
			b.Fatalf("%d cleaners scheduled after their evaluation, want %d", got, n)
		}
		b.ReportMetric(restored.Seconds(), "s-to-restore")
		b.ReportMetric(float64(n)/(evaluated-restored).Seconds(), "evaluations/s")
		b.ReportMetric(evaluated.Seconds(), "s-until-all-evaluated")
		b.ReportMetric(elapsed.Seconds(), "s-until-all-handled")
		b.ReportMetric(float64(n), "cleaners")
		if nb := counter.batches.Load(); nb > 0 {
			b.ReportMetric(float64(counter.n.Load())/float64(nb), "statuses/batch")
		}
	}
}

// profileController starts a CPU profile of the controller's phase alone
// when CAIRN_BENCH_CPUPROFILE names a file (do not pass -cpuprofile as
// well); the function returned stops it.
func profileController(b *testing.B) func() {
	path := os.Getenv("CAIRN_BENCH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	}
}

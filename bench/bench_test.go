// Package bench measures a whole cairn server (embedded etcd, HTTP API,
// controllers) on this machine. Run it with
//
//	go test -run '^$' -bench . -benchtime 1x ./bench/
//
// The process paces its garbage collector as `cairn server` does
// (main_test.go). Each benchmark runs a fixed workload per iteration and
// reports its own figures (creates/s, latency percentiles, seconds) with
// b.ReportMetric.
// Servers serve HTTPS, as `cairn server` does by default; with
// CAIRN_BENCH_INSECURE_HTTP=1 they serve plain HTTP, to compare.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
)

func startServer(b *testing.B) (*daemon.Daemon, client.Interface) {
	b.Helper()
	opts := daemon.Options{
		Listen: "127.0.0.1:0", DataDir: filepath.Join(b.TempDir(), "data"), Controllers: controllers.List(controllers.Config{GCWorkers: 32}),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), InsecureHTTP: insecureHTTP(),
	}
	clitest.RuntimeDefaults(b, &opts)
	d, err := daemon.Start(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Stop() })
	return d, httpClient(b, d)
}

// httpClient is an admin client of d over HTTP, keeping enough idle
// connections for 256 concurrent requests.
func httpClient(b *testing.B, d *daemon.Daemon) client.Interface {
	b.Helper()
	cfg := d.ClientConfig()
	tlsConfig, err := cfg.TLSConfig()
	if err != nil {
		b.Fatal(err)
	}
	cfg.HTTPClient = &http.Client{
		Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, TLSClientConfig: tlsConfig},
	}
	c, err := client.NewHTTP(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// insecureHTTP reports whether the benchmarks' servers serve plain HTTP
// (CAIRN_BENCH_INSECURE_HTTP=1) rather than HTTPS.
func insecureHTTP() bool { return os.Getenv("CAIRN_BENCH_INSECURE_HTTP") == "1" }

// value gives a benchmark secret its one value, written as stringData.
func value() testkit.Opt { return testkit.StringData(map[string]string{"k": "v"}) }

// percentile returns the p-th percentile (0..100) of sorted durations, in ms.
func percentile(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return float64(sorted[i]) / float64(time.Millisecond)
}

// BenchmarkCreateThroughput: creates per second over HTTP with 32
// concurrent clients on the embedded store, and their ratio to etcd's own
// rate of create transactions measured on the same etcd just before
// (EtcdCreateRate), and the process's CPU time per create (server and
// clients).
func BenchmarkCreateThroughput(b *testing.B) {
	d, c := startServer(b)
	const clients, perClient = 32, 500
	ctx := context.Background()
	var rate, etcd float64
	var cpu, etcdCPU time.Duration
	for iter := 0; iter < b.N; iter++ {
		etcd, etcdCPU = etcdRate(b, d, fmt.Sprintf("create%d", iter))
		cpu0 := processCPU(b)
		rate = concurrently(b, clients, perClient, func(w, i int) error {
			_, err := c.Create(ctx, testkit.Secret("default", fmt.Sprintf("t%d-c%d-%d", iter, w, i), nil, value()))
			return err
		})
		cpu = (processCPU(b) - cpu0) / (clients * perClient)
	}
	b.ReportMetric(rate, "creates/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3, "cpu-us/create")
	reportEtcdRatio(b, rate, etcd, cpu, etcdCPU)
}

// paced issues op at a steady rate for a duration (open loop: one goroutine
// per request, so a slow answer does not delay the next request) and
// returns the sorted latencies.
func paced(b *testing.B, rate int, d time.Duration, op func(i int) error) []time.Duration {
	b.Helper()
	n := int(d.Seconds() * float64(rate))
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	var failed atomic.Int64
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := 0; i < n; i++ {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			if err := op(i); err != nil {
				failed.Add(1)
			}
			lat[i] = time.Since(t0)
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		b.Fatalf("%d requests failed", failed.Load())
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat
}

// BenchmarkLatencyAt1000rps: p50/p99 latency of get and of create at a
// steady 1,000 requests per second each.
func BenchmarkLatencyAt1000rps(b *testing.B) {
	_, c := startServer(b)
	ctx := context.Background()
	for i := 0; i < 100; i++ {
		if _, err := c.Create(ctx, testkit.Secret("default", fmt.Sprintf("g%d", i), nil, value())); err != nil {
			b.Fatal(err)
		}
	}
	for iter := 0; iter < b.N; iter++ {
		gets := paced(b, 1000, 5*time.Second, func(i int) error {
			_, err := c.Get(ctx, "Secret", "default", fmt.Sprintf("g%d", i%100))
			return err
		})
		creates := paced(b, 1000, 5*time.Second, func(i int) error {
			_, err := c.Create(ctx, testkit.Secret("default", fmt.Sprintf("p%d-%d", iter, i), nil, value()))
			return err
		})
		b.ReportMetric(percentile(gets, 50), "get-p50-ms")
		b.ReportMetric(percentile(gets, 99), "get-p99-ms")
		b.ReportMetric(percentile(creates, 50), "create-p50-ms")
		b.ReportMetric(percentile(creates, 99), "create-p99-ms")
	}
}

// BenchmarkCascadeDelete10k: delete an owner with 10,000 dependents and
// measure the time until the owner and every dependent are gone.
func BenchmarkCascadeDelete10k(b *testing.B) {
	d, c := startServer(b)
	lc := local.New(d.Registry(), identity.System())
	ctx := context.Background()
	const deps = 10000
	for iter := 0; iter < b.N; iter++ {
		owner, err := lc.Create(ctx, testkit.Secret("default", fmt.Sprintf("owner%d", iter), nil, value()))
		if err != nil {
			b.Fatal(err)
		}
		var wg sync.WaitGroup
		var failed atomic.Int64
		for w := 0; w < 32; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < deps; i += 32 {
					dep := testkit.Secret("default", fmt.Sprintf("o%d-dep%d", iter, i), nil, value(),
						testkit.OwnedBy(owner), testkit.Labels("owner", owner.Name))
					if _, err := lc.Create(ctx, dep); err != nil {
						failed.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		if failed.Load() > 0 {
			b.Fatalf("%d dependents not created", failed.Load())
		}
		time.Sleep(2 * time.Second) // let the collector's graph take in the new objects
		start := time.Now()
		if _, _, err := c.Delete(ctx, "Secret", "default", owner.Name, api.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
		// The owner goes last; a Get is a light poll next to the cascade.
		testkit.Eventually(b, 5*time.Minute, "the owner to be gone", func() bool {
			_, err := lc.Get(ctx, "Secret", "default", owner.Name)
			return errors.Is(err, api.ErrNotFound)
		})
		testkit.EventuallyNil(b, time.Minute, "every dependent to be gone", func() error {
			l, err := lc.List(ctx, "Secret", "default", api.ListOptions{LabelSelector: "owner=" + owner.Name})
			if err == nil && len(l.Items) > 0 {
				err = fmt.Errorf("%d dependents left", len(l.Items))
			}
			return err
		})
		b.ReportMetric(time.Since(start).Seconds(), "s/cascade")
	}
}

// BenchmarkWatchFanout: 100 watchers over HTTP, 10,000 changes: every
// watcher must see every change exactly once; reports the p99 delay from
// the write's answer to its delivery.
func BenchmarkWatchFanout(b *testing.B) {
	_, c := startServer(b)
	const watchers, changes, writers = 100, 10000, 16
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for iter := 0; iter < b.N; iter++ {
		list, err := c.List(ctx, "Secret", "default", api.ListOptions{Limit: 1})
		if err != nil {
			b.Fatal(err)
		}
		var written sync.Map // resourceVersion → time the write returned
		recv := make([][]time.Time, watchers)
		rvs := make([][]string, watchers)
		var wg sync.WaitGroup
		for w := 0; w < watchers; w++ {
			wt, err := c.Watch(ctx, "Secret", "default", api.ListOptions{ResourceVersion: list.ResourceVersion})
			if err != nil {
				b.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer wt.Stop()
				for ev := range wt.Events() {
					if ev.Type == api.Bookmark {
						continue
					}
					recv[w] = append(recv[w], time.Now())
					rvs[w] = append(rvs[w], ev.Object.ResourceVersion)
					if len(rvs[w]) == changes {
						return
					}
				}
			}()
		}
		var wwg sync.WaitGroup
		for wr := 0; wr < writers; wr++ {
			wwg.Add(1)
			go func() {
				defer wwg.Done()
				for i := wr; i < changes; i += writers {
					out, err := c.Create(ctx, testkit.Secret("default", fmt.Sprintf("w%d-%d", iter, i), nil, value()))
					if err != nil {
						b.Error(err)
						return
					}
					written.Store(out.ResourceVersion, time.Now())
				}
			}()
		}
		wwg.Wait()
		wg.Wait()
		var lat []time.Duration
		for w := 0; w < watchers; w++ {
			seen := map[string]bool{}
			for i, rv := range rvs[w] {
				if seen[rv] {
					b.Fatalf("watcher %d got resourceVersion %s twice", w, rv)
				}
				seen[rv] = true
				if t, ok := written.Load(rv); ok {
					d := recv[w][i].Sub(t.(time.Time))
					if d < 0 {
						d = 0 // delivered before the writer saw its answer
					}
					lat = append(lat, d)
				}
			}
			if len(seen) != changes {
				b.Fatalf("watcher %d saw %d of %d changes", w, len(seen), changes)
			}
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		b.ReportMetric(percentile(lat, 50), "delivery-p50-ms")
		b.ReportMetric(percentile(lat, 99), "delivery-p99-ms")
	}
}

// keysWritten is how many keys the embedded etcd of this process has
// written so far (puts and deletes), from etcd's own counters; several
// keys may share one transaction (one revision).
func keysWritten(b *testing.B) float64 {
	b.Helper()
	puts, okPuts := testkit.MetricSum(b, prometheus.DefaultGatherer, "etcd_mvcc_put_total")
	deletes, okDeletes := testkit.MetricSum(b, prometheus.DefaultGatherer, "etcd_mvcc_delete_total")
	if !okPuts || !okDeletes {
		b.Fatal("etcd's put and delete counters are not registered in this process")
	}
	return puts + deletes
}

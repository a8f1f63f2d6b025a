package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/store/storetest"
)

// The phases of BenchmarkLeaderLoss, from the first create.
const (
	lossAt   = 4 * time.Second  // the etcd leader is killed
	returnAt = 10 * time.Second // it is restarted on its data dir
	lossEnd  = 16 * time.Second // the creates stop
	// lossWriters is the number of HTTP clients creating, each in a loop.
	lossWriters = 16
	// bucket is the resolution of the rate over time.
	bucket = 100 * time.Millisecond
)

// outcome is one create: when it ended, how long it took, whether it
// failed.
type outcome struct {
	end    time.Duration // since the first create
	took   time.Duration
	failed bool
}

// BenchmarkLeaderLoss: creates per second and their latency through the
// loss and the return of the etcd leader. An API server (no controllers,
// store timeout 5s) runs on a 3-member etcd on loopback; 16 HTTP clients
// create Secrets in a loop for 16 s; the leader is killed (abruptly) at 4 s
// and restarted at 10 s. It reports the steady rate before the loss, the
// dip after the loss and after the return (the lowest rate over 500 ms,
// and how long the rate stays below 80 % of the steady one), the latency
// percentiles of the steady phase and of the 2 s after the loss, the
// longest create, and the creates that failed.
func BenchmarkLeaderLoss(b *testing.B) {
	for iter := 0; iter < b.N; iter++ {
		c := storetest.StartCluster(b)
		d, err := daemon.Start(context.Background(), daemon.Options{
			Listen: "127.0.0.1:0", DataDir: filepath.Join(b.TempDir(), "data"), EtcdEndpoints: c.Endpoints(),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), InsecureHTTP: insecureHTTP(),
		})
		if err != nil {
			b.Fatal(err)
		}
		cl := httpClient(b, d)
		ctx := context.Background()

		var mu sync.Mutex
		var out []outcome
		start := time.Now()
		var wg sync.WaitGroup
		for w := range lossWriters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; time.Since(start) < lossEnd; i++ {
					t0 := time.Now()
					_, err := cl.Create(ctx, testkit.Secret("default", fmt.Sprintf("l%d-w%d-%d", iter, w, i), nil, value()))
					o := outcome{end: time.Since(start), took: time.Since(t0), failed: err != nil}
					mu.Lock()
					out = append(out, o)
					mu.Unlock()
				}
			}()
		}
		time.Sleep(lossAt)
		lead := c.WaitLeader(b)
		c.Kill(lead)
		time.Sleep(returnAt - lossAt)
		c.Restart(b, lead)
		wg.Wait()
		c.WaitReady(b)
		_ = d.Stop()

		r := rates(out)
		steady := medianRate(r[int(time.Second/bucket):int(lossAt/bucket)])
		lossMin, lossDip := dip(r, lossAt, steady)
		returnMin, returnDip := dip(r, returnAt, steady)
		failed := 0
		var before, after, all []time.Duration
		for _, o := range out {
			if o.failed {
				failed++
				continue
			}
			all = append(all, o.took)
			switch {
			case o.end > time.Second && o.end < lossAt:
				before = append(before, o.took)
			case o.end >= lossAt && o.end < lossAt+2*time.Second:
				after = append(after, o.took)
			}
		}
		for _, s := range [][]time.Duration{before, after, all} {
			slices.Sort(s)
		}
		b.ReportMetric(steady, "creates/s-steady")
		b.ReportMetric(lossMin, "creates/s-min-after-loss")
		b.ReportMetric(lossDip.Seconds(), "dip-s-loss")
		b.ReportMetric(returnMin, "creates/s-min-after-return")
		b.ReportMetric(returnDip.Seconds(), "dip-s-return")
		b.ReportMetric(percentile(before, 50), "p50-ms-steady")
		b.ReportMetric(percentile(before, 99), "p99-ms-steady")
		b.ReportMetric(percentile(after, 99), "p99-ms-2s-after-loss")
		b.ReportMetric(percentile(all, 99), "p99-ms-all")
		b.ReportMetric(percentile(all, 100), "max-ms")
		b.ReportMetric(float64(failed), "failed")
		b.ReportMetric(float64(len(out)), "creates")
	}
}

// rates are the creates that ended in each bucket since the first, per
// second.
func rates(out []outcome) []float64 {
	r := make([]float64, int(lossEnd/bucket)+1)
	for _, o := range out {
		if i := int(o.end / bucket); i < len(r) && !o.failed {
			r[i] += float64(time.Second / bucket)
		}
	}
	return r
}

// dip looks at the rate from at on, over the next 5 s: the lowest rate over
// 500 ms, and how long until the rate over 500 ms is back to 80 % of
// steady and stays so for a second (0 when it never falls below).
func dip(r []float64, at time.Duration, steady float64) (float64, time.Duration) {
	const window, hold = 5, 10 // buckets: rates over 500 ms, back for 1 s
	avg := func(i int) float64 {
		sum := 0.0
		for _, v := range r[i : i+window] {
			sum += v
		}
		return sum / window
	}
	first := int(at / bucket)
	last := min(len(r)-window, first+int(5*time.Second/bucket))
	lowest := steady
	for i := first; i <= last; i++ {
		lowest = min(lowest, avg(i))
	}
	for i := first; i <= last; i++ {
		back := true
		for j := i; j < i+hold && j <= len(r)-window; j++ {
			back = back && avg(j) >= 0.8*steady
		}
		if back {
			return lowest, time.Duration(i-first) * bucket
		}
	}
	return lowest, time.Duration(last-first) * bucket
}

// medianRate returns the median of v.
func medianRate(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

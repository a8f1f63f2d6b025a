package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
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
// and how long the rate over 500 ms stays below half the steady one), the
// rate over the 5 s after each, the latency
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
		var line []string
		for i := 0; i+5 <= len(r); i += 5 {
			sum := 0.0
			for _, v := range r[i : i+5] {
				sum += v / 5
			}
			line = append(line, fmt.Sprintf("%.0f", sum))
		}
		b.Logf("creates/s every 500 ms (the leader killed at %s, back at %s): %s", lossAt, returnAt, strings.Join(line, " "))
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
		mean := func(from time.Duration) float64 {
			sum := 0.0
			for _, v := range r[int(from/bucket):int((from+5*time.Second)/bucket)] {
				sum += v
			}
			return sum / float64(5*time.Second/bucket)
		}
		b.ReportMetric(mean(lossAt), "creates/s-5s-after-loss")
		b.ReportMetric(mean(returnAt), "creates/s-5s-after-return")
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

// dip looks at the rate over the 5 s from at: the lowest rate over 500 ms,
// and how long the rate over 500 ms stays below half of steady (in steps
// of 100 ms): the length of the dip, however noisy the rate around it.
func dip(r []float64, at time.Duration, steady float64) (float64, time.Duration) {
	const window = 5 // buckets: rates over 500 ms
	first := int(at / bucket)
	last := min(len(r)-window, first+int(5*time.Second/bucket))
	lowest, below := steady, 0
	for i := first; i <= last; i++ {
		sum := 0.0
		for _, v := range r[i : i+window] {
			sum += v
		}
		avg := sum / window
		lowest = min(lowest, avg)
		if avg < steady/2 {
			below++
		}
	}
	return lowest, time.Duration(below) * bucket
}

// medianRate returns the median of v.
func medianRate(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

// writers and writesPerWriter shape the update and patch workloads: 32
// concurrent HTTP clients, each writing its own object.
const writers, writesPerWriter = 32, 250

// seedOwn creates one Secret per writer for the update and patch
// benchmarks and returns them.
func seedOwn(b *testing.B, c client.Interface, prefix string) []*api.Object {
	b.Helper()
	objs := make([]*api.Object, writers)
	for w := range objs {
		o, err := c.Create(context.Background(), testkit.Secret("default", fmt.Sprintf("%s%d", prefix, w), nil, value()))
		if err != nil {
			b.Fatal(err)
		}
		objs[w] = o
	}
	return objs
}

// concurrently runs op perWriter times in each of n goroutines and returns
// the operations per second; it fails the benchmark when any failed.
func concurrently(b *testing.B, n, perWriter int, op func(w, i int) error) float64 {
	b.Helper()
	var wg sync.WaitGroup
	var failed atomic.Int64
	var first atomic.Value
	start := time.Now()
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				if err := op(w, i); err != nil {
					failed.Add(1)
					first.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		b.Fatalf("%d writes failed, the first with: %v", failed.Load(), first.Load())
	}
	return float64(n*perWriter) / time.Since(start).Seconds()
}

// BenchmarkUpdateThroughput: conditional PUTs per second (each carries the
// resourceVersion it read last) by 32 HTTP clients, each on its own object,
// and their ratio to etcd's own rate of create transactions measured on the
// same etcd just before (EtcdCreateRate), and the process's CPU time per
// update (server and clients).
func BenchmarkUpdateThroughput(b *testing.B) {
	d, c := startServer(b)
	ctx := context.Background()
	objs := seedOwn(b, c, "u")
	var rate, etcd float64
	var cpu, etcdCPU time.Duration
	for iter := 0; iter < b.N; iter++ {
		etcd, etcdCPU = etcdRate(b, d, fmt.Sprintf("update%d", iter))
		cpu0 := processCPU(b)
		rate = concurrently(b, writers, writesPerWriter, func(w, i int) error {
			o := objs[w].DeepCopy()
			o.Labels = map[string]string{"i": fmt.Sprint(i)}
			out, err := c.Update(ctx, o)
			if err == nil {
				objs[w] = out
			}
			return err
		})
		cpu = (processCPU(b) - cpu0) / (writers * writesPerWriter)
	}
	b.ReportMetric(rate, "updates/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3, "cpu-us/update")
	reportEtcdRatio(b, rate, etcd, cpu, etcdCPU)
}

// BenchmarkPatchThroughput: merge PATCHes without a resourceVersion per
// second by 32 HTTP clients, each on its own object.
func BenchmarkPatchThroughput(b *testing.B) {
	_, c := startServer(b)
	ctx := context.Background()
	seedOwn(b, c, "p")
	var rate float64
	for iter := 0; iter < b.N; iter++ {
		rate = concurrently(b, writers, writesPerWriter, func(w, i int) error {
			patch := fmt.Sprintf(`{"metadata":{"labels":{"i":"%d"}}}`, i)
			_, err := c.Patch(ctx, "Secret", "default", fmt.Sprintf("p%d", w), []byte(patch), false)
			return err
		})
	}
	b.ReportMetric(rate, "patches/s")
}

// BenchmarkPatchContended: 64 HTTP clients send merge PATCHes without a
// resourceVersion to one object, each setting its own label; every patch
// must apply. Reports the patches applied per second.
func BenchmarkPatchContended(b *testing.B) {
	_, c := startServer(b)
	ctx := context.Background()
	const clients, perClient = 64, 20
	var rate float64
	for iter := 0; iter < b.N; iter++ {
		name := fmt.Sprintf("hot%d", iter)
		if _, err := c.Create(ctx, testkit.Secret("default", name, nil, value())); err != nil {
			b.Fatal(err)
		}
		rate = concurrently(b, clients, perClient, func(w, i int) error {
			patch := fmt.Sprintf(`{"metadata":{"labels":{"w%d":"%d"}}}`, w, i)
			_, err := c.Patch(ctx, "Secret", "default", name, []byte(patch), false)
			return err
		})
	}
	b.ReportMetric(rate, "patches/s")
}

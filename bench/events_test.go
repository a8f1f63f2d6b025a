package bench

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	rtkube "cairn.dev/cairn/runtime/kubernetes"
)

// startEvents starts a server whose controllers are those of cfg (none
// when nil), with a project "bench" running cmd and copying one secret.
func startEvents(b *testing.B, cfg *controllers.Config, cmd ...string) (*daemon.Daemon, client.Interface, string) {
	b.Helper()
	return startEventsWith(b, cfg, nil, cmd...)
}

// startEventsWith is startEvents with the controllers' runtime rt (nil:
// the local runtime).
func startEventsWith(b *testing.B, cfg *controllers.Config, rt *rtkube.Runtime, cmd ...string) (*daemon.Daemon, client.Interface, string) {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "data")
	opts := daemon.Options{Listen: "127.0.0.1:0", DataDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), InsecureHTTP: insecureHTTP()}
	if rt != nil {
		opts.Runtime = rt
	}
	if cfg != nil {
		opts.Controllers = controllers.List(*cfg)
	}
	clitest.RuntimeDefaults(b, &opts)
	d, err := daemon.Start(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Stop() })
	c := httpClient(b, d)
	ctx := context.Background()
	if _, err := c.Create(ctx, testkit.Secret("default", "bench-secret", map[string]string{"password": "pw"})); err != nil {
		b.Fatal(err)
	}
	if _, err := client.For[*api.Project](c).Create(ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: "bench", Namespace: "default"},
		Spec: api.ProjectSpec{Secrets: []string{"bench-secret"}, WorkerTemplate: api.WorkerSpec{Command: cmd, Image: "example.com/worker:1"}}}); err != nil {
		b.Fatal(err)
	}
	return d, c, dir
}

func eventObject() *api.Object {
	spec, _ := json.Marshal(api.EventSpec{Project: "bench", Source: "bench", Type: "run"})
	return &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindEvent},
		ObjectMeta: api.ObjectMeta{Namespace: "default"}, Fields: map[string]json.RawMessage{"spec": spec}}
}

// BenchmarkEventIngest: events created per second over HTTP by 32
// concurrent clients on the embedded store, each event written in one
// transaction with its Secret (a copy of the project's secret and its
// worker token) and its token's registration. No controllers run.
func BenchmarkEventIngest(b *testing.B) {
	_, c, _ := startEvents(b, nil, "true")
	const clients, perClient = 32, 200
	ctx := context.Background()
	var rate float64
	for iter := 0; iter < b.N; iter++ {
		rate = concurrently(b, clients, perClient, func(w, i int) error {
			_, err := c.Create(ctx, eventObject())
			return err
		})
	}
	b.ReportMetric(rate, "events/s")
}

// BenchmarkEventSchedulingLatency: PENDING → RUNNING with free capacity,
// one event at a time: from the create's answer to the first RUNNING seen
// by a watch.
func BenchmarkEventSchedulingLatency(b *testing.B) {
	_, c, _ := startEvents(b, &controllers.Config{EventMaxWorkers: 64, EventGracePeriod: time.Second}, "sleep", "1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := c.Watch(ctx, api.KindEvent, "default", api.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	running := make(chan string, 1024)
	go func() {
		for ev := range w.Events() {
			var e api.Event
			if ev.Object != nil && ev.Object.Into(&e) == nil && e.Status.Worker.Phase == api.PhaseRunning {
				running <- e.Name
			}
		}
	}()
	const n = 100
	var lat []time.Duration
	for iter := 0; iter < b.N; iter++ {
		lat = lat[:0]
		for range n {
			t0 := time.Now()
			obj, err := c.Create(ctx, eventObject())
			if err != nil {
				b.Fatal(err)
			}
			for name := range running {
				if name == obj.Name {
					break
				}
			}
			lat = append(lat, time.Since(t0))
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(percentile(lat, 50), "p50-ms")
	b.ReportMetric(percentile(lat, 99), "p99-ms")
}

// BenchmarkEvents1000True: 1,000 events whose worker is `true`, capacity
// 16: the time until every one is SUCCEEDED and its workspace cleaned up,
// and the worker starts per second.
func BenchmarkEvents1000True(b *testing.B) {
	for iter := 0; iter < b.N; iter++ {
		_, c, dir := startEvents(b, &controllers.Config{EventMaxWorkers: 16, EventGracePeriod: time.Nanosecond}, "true")
		ctx := context.Background()
		const n = 1000
		t0 := time.Now()
		uids := make([]string, 0, n)
		for range n {
			obj, err := c.Create(ctx, eventObject())
			if err != nil {
				b.Fatal(err)
			}
			uids = append(uids, obj.UID)
		}
		for {
			l, err := c.List(ctx, api.KindEvent, "default", api.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			done := 0
			for _, o := range l.Items {
				var e api.Event
				if o.Into(&e) == nil && e.Status.Worker.Phase == api.PhaseSucceeded {
					done++
				}
			}
			if done == n {
				break
			}
			if time.Since(t0) > 10*time.Minute {
				b.Fatalf("only %d of %d SUCCEEDED after 10 minutes", done, n)
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, uid := range uids {
			ws := filepath.Join(dir, "runtime", "units", api.WorkerUnitID(uid), "workspace")
			for {
				if _, err := os.Stat(ws); errors.Is(err, os.ErrNotExist) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		total := time.Since(t0)
		b.ReportMetric(total.Seconds(), "s-all-done")
		b.ReportMetric(float64(n)/total.Seconds(), "starts/s")
	}
}

package registry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/registry"
)

// rangeCalls is how many Range calls (single reads and lists; not the
// compares of a transaction) the etcd of this process has answered, from
// its gRPC server's own counter.
func rangeCalls(t *testing.T) float64 {
	t.Helper()
	n, found := testkit.MetricSum(t, prometheus.DefaultGatherer, "grpc_server_handled_total", "grpc_method", "Range")
	if !found {
		t.Fatal("etcd's gRPC server counters are not registered in this process")
	}
	return n
}

// watchCleaners watches the Cleaners of default until the test ends, so
// that their watch cache runs.
func watchCleaners(t *testing.T, r *registry.Registry) api.Watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(sysCtx())
	w, err := r.Watch(ctx, api.KindCleaner, "default", api.ListOptions{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Stop()
		cancel()
	})
	return w
}

func TestUpdates_TakeTheObjectTheyReplaceFromTheWatchCache(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	w := watchCleaners(t, r)
	cl, err := r.Create(ctx, testkit.Cleaner("default", "cached"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Events(): // the cache has the object
	case <-time.After(20 * time.Second):
		t.Fatal("the watch saw nothing of the create")
	}
	before := rangeCalls(t)
	out, err := r.UpdateStatus(ctx, withStatus(cl, `{"phase":"Waiting"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := rangeCalls(t) - before; got != 0 {
		t.Fatalf("a status write over a version the cache holds read the store %v times, want none", got)
	}
	statusIs(t, r, api.KindCleaner, "default", "cached", `{"phase":"Waiting"}`)
	// The same write again is at a version the object has left: Conflict,
	// confirmed with one linearizable read, batched or not.
	for _, write := range []func() error{
		func() error { _, err := r.UpdateStatus(ctx, withStatus(cl, `{"phase":"Pending"}`)); return err },
		func() error {
			return r.UpdateStatuses(ctx, []*api.Object{withStatus(cl, `{"phase":"Pending"}`)})[0].Err
		},
	} {
		if err := write(); !errors.Is(err, api.ErrConflict) {
			t.Fatalf("a write at the version replaced by %s: %v, want Conflict", out.ResourceVersion, err)
		}
	}
	statusIs(t, r, api.KindCleaner, "default", "cached", `{"phase":"Waiting"}`)
}

func TestUpdates_ActingOnAStaleCachedVersionLoseNothing(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	watchCleaners(t, r)
	if _, err := r.Create(ctx, testkit.Cleaner("default", "raced")); err != nil {
		t.Fatal(err)
	}
	// Two patches back to back: the second often finds the cache still at
	// the version before the first, and must not undo it.
	for i := range 50 {
		for _, label := range []string{"a", "b"} {
			patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"%d"}}}`, label, i)
			if _, err := r.Patch(ctx, api.KindCleaner, "default", "raced", patch, false); err != nil {
				t.Fatal(err)
			}
		}
		got, err := r.Get(ctx, api.KindCleaner, "default", "raced")
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprint(i); got.Labels["a"] != want || got.Labels["b"] != want {
			t.Fatalf("round %d: labels %v, want a and b at %s", i, got.Labels, want)
		}
	}
}

// Package failovertest measures controller failover between two processes'
// controller managers that share one API server: each manager has its own
// in-process client, informers and garbage collector (kept warm while it
// waits, gc.Standby), as two `cairn server` processes over one etcd have.
// The leader dies — its client is cut: every call hangs, as for a killed
// or partitioned process, so it neither renews nor releases the Lease —
// and at that moment a namespace is deleted. The figure is the time from
// the death to the survivor's first action: the first object of that
// namespace its garbage collector deletes.
//
// Tests assert only a generous bound on it; bench/failover_test.go
// reports it against the number of objects.
package failovertest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/gc"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/server/servertest"
)

// Options configures one failover.
type Options struct {
	// Objects is how many objects the store holds besides the namespace
	// deleted at the leader's death.
	Objects int
	// Doomed is how many objects that namespace holds; default 100.
	Doomed int
	// LeaseDuration is the managers' lease duration; default 5s.
	LeaseDuration time.Duration
	// Logger receives the managers' logs; default none.
	Logger *slog.Logger
	// PerTermGraph runs the garbage collector without its standby part
	// (gc.Setup instead of gc.Standby): each term builds its graph anew,
	// from the informers' caches (which stay warm); for comparison.
	PerTermGraph bool
}

// Result is what one failover took.
type Result struct {
	// Populate is the time taken to create the objects, Warm the time
	// until both managers' dependency graphs held them all.
	Populate, Warm time.Duration
	// Takeover is the time from the leader's death to the start of the
	// survivor's acquisition of the Lease (its acquireTime); Failover to
	// its first action (the first deletion it made).
	Takeover, Failover time.Duration
}

// Run sets up the two managers over a fresh test server holding
// opts.Objects objects, kills the leader and measures the failover. It
// fails t on any error; everything stops at t's cleanup.
func Run(t testing.TB, opts Options) Result {
	t.Helper()
	if opts.Doomed <= 0 {
		opts.Doomed = 100
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ts := servertest.Start(t)
	ctx := identity.With(context.Background(), identity.System())
	var res Result
	start := time.Now()
	if _, err := testkit.Populate(ctx, ts.Registry, "fill", opts.Objects, 8); err != nil {
		t.Fatal(err)
	}
	if _, err := testkit.Populate(ctx, ts.Registry, "doomed", opts.Doomed, 1); err != nil {
		t.Fatal(err)
	}
	res.Populate = time.Since(start)
	total := opts.Objects + opts.Doomed

	start = time.Now()
	a := startManager(t, ts, "http://a.test", opts)
	testkit.Eventually(t, 5*time.Minute, "manager a to lead", a.m.Leading)
	b := startManager(t, ts, "http://b.test", opts)
	warm := []*process{a, b}
	if opts.PerTermGraph {
		warm = warm[:1] // b builds its graph when elected
	}
	for _, p := range warm {
		testkit.Eventually(t, 10*time.Minute, p.id+"'s dependency graph to hold every object", func() bool {
			return p.graphNodes() >= float64(total)
		})
	}
	res.Warm = time.Since(start)

	sys := local.New(ts.Registry, identity.System())
	w, err := sys.Watch(ctx, api.KindSecret, "doomed-0", api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for range opts.Doomed { // the current objects come first, as ADDED
		<-w.Events()
	}
	death := time.Now()
	a.cut.Store(true)
	if _, _, err := sys.Delete(ctx, api.KindNamespace, "", "doomed-0", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(10*opts.LeaseDuration + time.Minute)
	for res.Failover == 0 {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("the watch of the doomed namespace ended: %v", w.Err())
			}
			if ev.Type == api.Deleted {
				res.Failover = time.Since(death)
			}
		case <-timeout:
			t.Fatal("the survivor deleted nothing of the doomed namespace")
		}
	}
	// The survivor wrote its acquireTime with this process's clock.
	l, err := client.For[*api.Lease](sys).Get(ctx, "", manager.LeaseName)
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity != b.id {
		t.Fatalf("the Lease is held by %q, want the survivor %s", l.Spec.HolderIdentity, b.id)
	}
	res.Takeover = l.Spec.AcquireTime.Sub(death)
	return res
}

// process is one manager with its own cuttable client and metrics.
type process struct {
	id      string
	m       *manager.Manager
	cut     *atomic.Bool
	metrics *prometheus.Registry
}

// startManager runs a manager of the garbage collector alone, as id, until
// t's cleanup.
func startManager(t testing.TB, ts *servertest.Server, id string, opts Options) *process {
	t.Helper()
	p := &process{id: id, cut: new(atomic.Bool), metrics: prometheus.NewRegistry()}
	c := &cuttable{c: local.New(ts.Registry, identity.System()), cut: p.cut}
	ctrl := manager.Controller{Name: "gc", Standby: func(pr *manager.Process) (func(*manager.Term) error, error) {
		return gc.Standby(pr, gc.Options{Workers: 16})
	}}
	if opts.PerTermGraph {
		ctrl = manager.Controller{Name: "gc", Setup: func(t *manager.Term) error { return gc.Setup(t, gc.Options{Workers: 16}) }}
	}
	var err error
	p.m, err = manager.New(manager.Options{Client: c, Identity: id, LeaderElection: true,
		LeaseDuration: opts.LeaseDuration, Logger: opts.Logger.With("manager", id), Metrics: p.metrics,
		Controllers: []manager.Controller{ctrl}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		p.cut.Store(false)
		if err := <-done; err != nil {
			t.Errorf("manager %s: %v", id, err)
		}
	})
	return p
}

// graphNodes reads the manager's cairn_gc_graph_nodes.
func (p *process) graphNodes() float64 {
	mfs, err := p.metrics.Gather()
	if err != nil {
		return 0
	}
	for _, mf := range mfs {
		if mf.GetName() == "cairn_gc_graph_nodes" && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

// cuttable is a client whose calls, once cut is set, hang until their
// context ends: a dead process's view of the API, as far as what it can
// still change goes.
type cuttable struct {
	c   client.Interface
	cut *atomic.Bool
}

// hang blocks until ctx ends when the client is cut and returns why.
func (c *cuttable) hang(ctx context.Context) error {
	if !c.cut.Load() {
		return nil
	}
	<-ctx.Done()
	return fmt.Errorf("failovertest: cut off: %w", ctx.Err())
}

func (c *cuttable) Create(ctx context.Context, obj *api.Object) (*api.Object, error) {
	if err := c.hang(ctx); err != nil {
		return nil, err
	}
	return c.c.Create(ctx, obj)
}

func (c *cuttable) Get(ctx context.Context, kind, ns, name string) (*api.Object, error) {
	if err := c.hang(ctx); err != nil {
		return nil, err
	}
	return c.c.Get(ctx, kind, ns, name)
}

func (c *cuttable) List(ctx context.Context, kind, ns string, opts api.ListOptions) (*api.List, error) {
	if err := c.hang(ctx); err != nil {
		return nil, err
	}
	return c.c.List(ctx, kind, ns, opts)
}

func (c *cuttable) Update(ctx context.Context, obj *api.Object) (*api.Object, error) {
	if err := c.hang(ctx); err != nil {
		return nil, err
	}
	return c.c.Update(ctx, obj)
}

func (c *cuttable) UpdateStatus(ctx context.Context, obj *api.Object) (*api.Object, error) {
	if err := c.hang(ctx); err != nil {
		return nil, err
	}
	return c.c.UpdateStatus(ctx, obj)
}

func (c *cuttable) Patch(ctx context.Context, kind, ns, name string, patch []byte, status bool) (*api.Object, error) {
	if err := c.hang(ctx); err != nil {
		return nil, err
	}
	return c.c.Patch(ctx, kind, ns, name, patch, status)
}

func (c *cuttable) Delete(ctx context.Context, kind, ns, name string, opts api.DeleteOptions) (*api.Object, bool, error) {
	if err := c.hang(ctx); err != nil {
		return nil, false, err
	}
	return c.c.Delete(ctx, kind, ns, name, opts)
}

func (c *cuttable) Watch(ctx context.Context, kind, ns string, opts api.ListOptions) (api.Watcher, error) {
	if err := c.hang(ctx); err != nil {
		return nil, err
	}
	return c.c.Watch(ctx, kind, ns, opts)
}

func (c *cuttable) Kinds(ctx context.Context) ([]api.KindInfo, error) {
	if err := c.hang(ctx); err != nil {
		return nil, err
	}
	return c.c.Kinds(ctx)
}

func (c *cuttable) Action(ctx context.Context, req client.ActionRequest) ([]byte, error) {
	if err := c.hang(ctx); err != nil {
		return nil, err
	}
	return c.c.Action(ctx, req)
}

func (c *cuttable) ActionStream(ctx context.Context, req client.ActionRequest) (io.ReadCloser, error) {
	if err := c.hang(ctx); err != nil {
		return nil, err
	}
	return c.c.ActionStream(ctx, req)
}

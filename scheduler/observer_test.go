package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/runtime"
	rtlocal "cairn.dev/cairn/runtime/local"
	"cairn.dev/cairn/scheduler"
)

// observer is a cairn server running no controllers, and an event
// scheduler of the test's own over a local runtime, so that a test can
// stop and start the scheduler and its runtime (a restart of the process
// that runs them), and see the status writes it makes.
type observer struct {
	t       *testing.T
	d       *daemon.Daemon
	c       client.Interface // the test's own client (admin, over HTTP)
	root    string           // the runtime's root, kept across restarts
	rt      runtime.Runtime
	metrics *prometheus.Registry
	stop    func()
}

func startObserver(t *testing.T) *observer {
	t.Helper()
	testkit.UnitReachable(t)
	d, err := daemon.Start(context.Background(), daemon.Options{Listen: "127.0.0.1:0", DataDir: filepath.Join(t.TempDir(), "data"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop() })
	c, err := client.NewHTTP(d.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	o := &observer{t: t, d: d, c: c, root: filepath.Join(t.TempDir(), "rt")}
	t.Cleanup(o.removeUnits)
	return o
}

// removeUnits kills and removes every unit of the runtime's root: units
// outlive their runtime by design, and a test leaves none behind.
func (o *observer) removeUnits() {
	rt, err := rtlocal.New(rtlocal.Options{Root: o.root, KillGrace: time.Second,
		Isolation: rtlocal.Isolation{None: os.Geteuid() != 0}})
	if err != nil {
		o.t.Logf("cannot remove the units: %v", err)
		return
	}
	defer rt.Close()
	units, _ := rt.List(context.Background())
	for _, u := range units {
		if err := rt.Remove(context.Background(), u.ID); err != nil {
			o.t.Logf("cannot remove unit %s: %v", u.ID, err)
		}
	}
}

// run starts the runtime and a scheduler acting through sc (nil: the
// test's client) on the runtime as wrap makes it (nil: as it is), with
// opts.
func (o *observer) run(opts scheduler.Options, sc client.Interface, wrap func(runtime.Runtime) runtime.Runtime) {
	o.t.Helper()
	rt, err := rtlocal.New(rtlocal.Options{Root: o.root, KillGrace: time.Second,
		Isolation: rtlocal.Isolation{None: os.Geteuid() != 0}})
	if err != nil {
		o.t.Fatal(err)
	}
	if sc == nil {
		sc = o.c
	}
	o.metrics = prometheus.NewRegistry()
	opts.Runtime = rt
	if wrap != nil {
		opts.Runtime = wrap(rt)
	}
	m, err := manager.New(manager.Options{Client: sc, Metrics: o.metrics, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Controllers: []manager.Controller{{Name: "events", Setup: func(tm *manager.Term) error { return scheduler.Setup(tm, opts) }}}})
	if err != nil {
		o.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = m.Run(ctx)
	}()
	var once sync.Once
	o.rt = rt
	o.stop = func() {
		once.Do(func() {
			cancel()
			<-done
			_ = rt.Close()
		})
	}
	o.t.Cleanup(o.stop)
}

func (o *observer) project(name string, spec api.ProjectSpec) {
	o.t.Helper()
	if _, err := client.For[*api.Project](o.c).Create(context.Background(),
		&api.Project{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"}, Spec: spec}); err != nil {
		o.t.Fatal(err)
	}
}

// create creates an event of project through the events endpoint.
func (o *observer) create(project string) *api.Event {
	o.t.Helper()
	ev, err := client.For[*api.Event](o.c).Create(context.Background(), &api.Event{ObjectMeta: api.ObjectMeta{Namespace: "default"},
		Spec: api.EventSpec{Project: project, Source: "test", Type: "run"}})
	if err != nil {
		o.t.Fatal(err)
	}
	return ev
}

// until waits for the event name to satisfy ok, and returns it.
func (o *observer) until(name, what string, ok func(*api.Event) bool) *api.Event {
	o.t.Helper()
	var ev *api.Event
	testkit.Eventually(o.t, wait, what, func() bool {
		var err error
		ev, err = client.For[*api.Event](o.c).Get(context.Background(), "default", name)
		if err != nil {
			o.t.Fatal(err)
		}
		return ok(ev)
	})
	return ev
}

// reconciles is cairn_controller_reconciles_total of the events
// controller for result.
func (o *observer) reconciles(result string) float64 {
	o.t.Helper()
	families, err := o.metrics.Gather()
	if err != nil {
		o.t.Fatal(err)
	}
	n := 0.0
	for _, f := range families {
		if f.GetName() != "cairn_controller_reconciles_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["name"] == "events" && labels["result"] == result {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// racingClient is the scheduler's client, whose first status write that
// moves the job job to RUNNING is preceded by a real write, through the
// API, that aborts that job: the scheduler's write then meets a real 409.
type racingClient struct {
	client.Interface
	job string

	mu       sync.Mutex
	fired    bool
	conflict error // what the scheduler's write got
}

func (r *racingClient) UpdateStatus(ctx context.Context, obj *api.Object) (*api.Object, error) {
	var ev api.Event
	if obj.Kind != api.KindEvent || obj.Into(&ev) != nil || !r.runs(&ev) {
		return r.Interface.UpdateStatus(ctx, obj)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fired {
		return r.Interface.UpdateStatus(ctx, obj)
	}
	r.fired = true
	cur, err := client.For[*api.Event](r.Interface).Get(ctx, ev.Namespace, ev.Name)
	if err != nil {
		return nil, err
	}
	for i := range cur.Status.Jobs {
		if j := &cur.Status.Jobs[i]; j.Name == r.job {
			j.Phase, j.Reason, j.Ended = api.PhaseAborted, "aborted by the test", time.Now().UTC()
		}
	}
	if _, err := client.For[*api.Event](r.Interface).UpdateStatus(ctx, cur); err != nil {
		return nil, err
	}
	out, err := r.Interface.UpdateStatus(ctx, obj)
	r.conflict = err
	return out, err
}

func (r *racingClient) runs(ev *api.Event) bool {
	for _, j := range ev.Status.Jobs {
		if j.Name == r.job && j.Phase == api.PhaseRunning {
			return true
		}
	}
	return false
}

// TestObserver_409FromATerminalJobWhileTheWorkerLivesIsTerminalAtOnce: the
// observer's write of a job's RUNNING meets a real 409, because the job
// was aborted through the API meanwhile while its worker runs on. The
// seed's answer is to treat the job as terminal at once: its unit is
// killed and cleaned up, the worker runs on, and the reconcile is no
// error retried generically.
func TestObserver_409FromATerminalJobWhileTheWorkerLivesIsTerminalAtOnce(t *testing.T) {
	o := startObserver(t)
	racing := &racingClient{Interface: o.c, job: "j"}
	o.run(scheduler.Options{}, racing, nil)
	o.project("p", api.ProjectSpec{WorkerTemplate: api.WorkerSpec{Command: []string{"sleep", "300"}}})
	ev := o.create("p")
	o.until(ev.Name, "the worker RUNNING", func(ev *api.Event) bool { return ev.Status.Worker.Phase == api.PhaseRunning })
	body, _ := json.Marshal(map[string]any{"name": "j", "spec": api.WorkerSpec{Command: []string{"sleep", "300"}}})
	if _, err := o.c.Action(context.Background(), client.ActionRequest{Kind: api.KindEvent, Namespace: "default", Name: ev.Name,
		Action: "jobs", Body: body}); err != nil {
		t.Fatal(err)
	}
	id := api.JobUnitID(ev.UID, "j")
	testkit.Eventually(t, wait, "the aborted job's unit killed and cleaned up", func() bool {
		st, err := o.rt.State(context.Background(), id)
		return err == nil && st.Phase.Done() && !exists(filepath.Join(o.root, "units", id, "workspace"))
	})
	racing.mu.Lock()
	got := racing.conflict
	racing.mu.Unlock()
	if !errors.Is(got, api.ErrConflict) {
		t.Fatalf("the scheduler's write got %v, want the real 409", got)
	}
	cur := o.until(ev.Name, "the job ABORTED", func(ev *api.Event) bool { return ev.Status.Jobs[0].Phase == api.PhaseAborted })
	if cur.Status.Worker.Phase != api.PhaseRunning {
		t.Fatalf("the worker is %s, want it RUNNING still", cur.Status.Worker.Phase)
	}
	if st, err := o.rt.State(context.Background(), api.WorkerUnitID(ev.UID)); err != nil || st.Phase != runtime.PhaseRunning {
		t.Fatalf("the worker's unit is %+v (%v), want it running", st, err)
	}
	if n := o.reconciles("error"); n != 0 {
		t.Fatalf("%v reconciles of the event ended in an error (retried generically), want none", n)
	}
}

package cleaner_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cleaner"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/server/servertest"
	"cairn.dev/cairn/trace"
)

const ns = api.DefaultNamespace

// wait is the bound of every wait for the controller: generous, CI is
// slow and loaded.
const wait = 30 * time.Second

// env is a real API server (embedded etcd, HTTP on loopback) and an
// in-process client to it.
type env struct {
	t  testing.TB
	ts *servertest.Server
	c  client.Interface
	// traces is where the controllers started by start record, and what
	// the server's trace endpoint (`cairn explain`) serves.
	traces *trace.Store
}

func newEnv(t testing.TB) *env {
	t.Helper()
	traces := trace.NewStore(10, 1000)
	ts := servertest.Start(t, servertest.WithTraces(leading{traces}))
	return &env{t: t, ts: ts, c: local.New(ts.Registry, identity.System()), traces: traces}
}

// leading serves the env's traces as the process leading the controllers.
type leading struct{ s *trace.Store }

func (l leading) Trace(kind, ns, name string) (*api.Trace, bool) {
	tr, _ := l.s.Get(kind, ns, name)
	return tr, true
}

func (leading) Leader(context.Context) (string, error) { return "", nil }

// running is one controller run.
type running struct {
	ctl    *cleaner.Controller
	traces *trace.Store
	stop   func()
}

// start runs a controller acting through c (the env's client when nil)
// until the returned stop is called or the test ends.
func (e *env) start(c client.Interface) *running {
	e.t.Helper()
	return e.startWith(c, cleaner.Options{}, nil)
}

// startWith is start with opts, in a manager exporting metrics to reg
// (when not nil); the logger and traces are set here.
func (e *env) startWith(c client.Interface, opts cleaner.Options, reg prometheus.Registerer) *running {
	e.t.Helper()
	if c == nil {
		c = e.c
	}
	traces := e.traces
	ctl := cleaner.New(opts)
	// The manager's term commits status writes together (client.GroupStatuses).
	m, err := manager.New(manager.Options{Client: c, Logger: testLogger(), Traces: traces, Metrics: reg,
		Controllers: []manager.Controller{{Name: "cleaner", Setup: ctl.Setup}}})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("manager Run: %v", err)
		}
	}
	e.t.Cleanup(stop)
	testkit.Eventually(e.t, wait, "the controller restored its schedule", ctl.Restored)
	return &running{ctl: ctl, traces: traces, stop: stop}
}

func testLogger() *slog.Logger {
	if os.Getenv("CLEANER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func (e *env) cleaners() client.Typed[*api.Cleaner] { return client.For[*api.Cleaner](e.c) }

func (e *env) createCleaner(name string, spec api.CleanerSpec) *api.Cleaner {
	e.t.Helper()
	if spec.Retry.Period.Duration == 0 {
		spec.Retry.Period.Duration = time.Hour // only a target change or the TTL acts within a test
	}
	c, err := e.cleaners().Create(context.Background(), &api.Cleaner{ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns}, Spec: spec})
	if err != nil {
		e.t.Fatalf("create cleaner %s: %v", name, err)
	}
	return c
}

func (e *env) getCleaner(name string) (*api.Cleaner, error) {
	return e.cleaners().Get(context.Background(), ns, name)
}

func (e *env) create(o *api.Object) *api.Object {
	e.t.Helper()
	out, err := e.c.Create(context.Background(), o)
	if err != nil {
		e.t.Fatalf("create %s %s: %v", o.Kind, o.Name, err)
	}
	return out
}

func (e *env) secret(name string, opts ...testkit.Opt) *api.Object {
	e.t.Helper()
	return e.create(testkit.Secret(ns, name, map[string]string{"token": "hunter2"}, opts...))
}

func (e *env) label(kind, name, key, value string) {
	e.t.Helper()
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, key, value)
	if _, err := e.c.Patch(context.Background(), kind, ns, name, patch, false); err != nil {
		e.t.Fatalf("label %s %s: %v", kind, name, err)
	}
}

func (e *env) del(kind, name string) {
	e.t.Helper()
	if _, _, err := e.c.Delete(context.Background(), kind, ns, name, api.DeleteOptions{Force: true}); err != nil {
		e.t.Fatalf("delete %s %s: %v", kind, name, err)
	}
}

// gone reports whether kind/name is gone or being deleted (no garbage
// collector runs in these tests to finish deletions).
func (e *env) gone(kind, name string) bool {
	o, err := e.c.Get(context.Background(), kind, ns, name)
	if errors.Is(err, api.ErrNotFound) {
		return true
	}
	return err == nil && o.Deleting()
}

// waitPhase waits until the Cleaner's status says phase and returns it.
func (e *env) waitPhase(name string, phase api.CleanerPhase) *api.Cleaner {
	e.t.Helper()
	var got *api.Cleaner
	testkit.EventuallyNil(e.t, wait, "cleaner "+name+" in phase "+string(phase), func() error {
		c, err := e.getCleaner(name)
		if err != nil {
			return err
		}
		if c.Status.Phase != phase {
			return fmt.Errorf("phase %q, lastError %+v", c.Status.Phase, c.Status.LastError)
		}
		got = c
		return nil
	})
	return got
}

// steps returns the messages of the reconciles of a Cleaner traced, oldest
// first.
func steps(r *running, name string) []string {
	tr, ok := r.traces.Get(api.KindCleaner, ns, name)
	if !ok {
		return nil
	}
	var out []string
	for _, rec := range tr.Reconciles {
		for _, s := range rec.Steps {
			out = append(out, s.Message)
		}
	}
	return out
}

// traceHas waits until the trace of Cleaner name has a step containing
// each of subs (a reconcile's steps are kept once it returns, after its
// status write is visible), and returns the steps and whether it has.
func traceHas(t *testing.T, r *running, name string, subs ...string) ([]string, bool) {
	t.Helper()
	var st []string
	has := func() bool {
		st = steps(r, name)
		for _, sub := range subs {
			if !containsStep(st, sub) {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(wait)
	for !has() {
		if time.Now().After(deadline) {
			return st, false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return st, true
}

func containsStep(steps []string, sub string) bool {
	return slices.ContainsFunc(steps, func(s string) bool { return strings.Contains(s, sub) })
}

func secretTarget(name, obj string, del bool) api.CleanerTarget {
	return api.CleanerTarget{Name: name, Reference: api.TargetReference{Kind: api.KindSecret, Name: obj}, Delete: del}
}

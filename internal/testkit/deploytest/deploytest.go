// Package deploytest is the test kit of the deployment controllers: a
// real API server (embedded etcd, in-process client) with the garbage
// collector and the controllers a test names running in a manager, and
// helpers to create executions and read deploy items.
package deploytest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/deployitem"
	"cairn.dev/cairn/gc"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/runtime"
	"cairn.dev/cairn/server/servertest"
	"cairn.dev/cairn/trace"
)

// NS is the namespace the tests work in.
const NS = "deploy"

// Wait is the bound of every wait: generous, for loaded CI machines.
const Wait = 60 * time.Second

// Env is a server with controllers running against it.
type Env struct {
	T      testing.TB
	Server *servertest.Server
	C      client.Interface
	Traces *trace.Store
}

// Options of Start.
type Options struct {
	// Runtime is handed to the controllers (Term.Runtime).
	Runtime runtime.Runtime
}

// Logger discards logs unless DEPLOY_TEST_LOG is set.
func Logger() *slog.Logger {
	if os.Getenv("DEPLOY_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// Start runs a server, the namespace NS, and a manager running the
// garbage collector and ctrls until the test ends.
func Start(t testing.TB, opts Options, ctrls ...manager.Controller) *Env {
	t.Helper()
	traces := trace.NewStore(200, 0) // deep rings: tests look for steps of earlier reconciles
	ts := servertest.Start(t)
	e := &Env{T: t, Server: ts, C: local.New(ts.Registry, identity.System()), Traces: traces}
	e.Create(testkit.Object(api.KindNamespace, "", NS))
	e.Run(opts, ctrls...)
	return e
}

// Run runs a manager with the garbage collector and ctrls (on opts's
// runtime) until the returned stop is called or the test ends; stop
// waits for every controller to return.
func (e *Env) Run(opts Options, ctrls ...manager.Controller) (stop func()) {
	t := e.T
	t.Helper()
	all := append([]manager.Controller{{Name: "gc", Setup: func(tm *manager.Term) error {
		return gc.Setup(tm, gc.Options{Workers: 4, ConfirmRetry: 50 * time.Millisecond})
	}}}, ctrls...)
	m, err := manager.New(manager.Options{Client: e.C, Controllers: all, Logger: Logger(), Traces: e.Traces, Runtime: opts.Runtime,
		APIServer: e.Server.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

// Ctx is a context for one call.
func (e *Env) Ctx() context.Context { return testkit.Context(e.T) }

// Create creates obj or fails the test.
func (e *Env) Create(obj *api.Object) *api.Object {
	e.T.Helper()
	out, err := e.C.Create(e.Ctx(), obj)
	if err != nil {
		e.T.Fatalf("create %s %s: %v", obj.Kind, obj.Name, err)
	}
	return out
}

// Object converts a typed object, setting its type meta and namespace.
func Object(kind, name string, v api.Resource) *api.Object {
	*v.GetTypeMeta() = api.TypeMeta{APIVersion: api.APIVersion, Kind: kind}
	m := v.GetObjectMeta()
	m.Name, m.Namespace = name, NS
	o, err := api.FromResource(v)
	if err != nil {
		panic(err)
	}
	return o
}

// Execution creates an execution of items.
func (e *Env) Execution(name string, items []api.DeployItemTemplate, annotations ...string) *api.Execution {
	e.T.Helper()
	x := &api.Execution{Spec: api.ExecutionSpec{DeployItems: items}}
	if len(annotations) > 0 {
		x.Annotations = map[string]string{}
		for i := 0; i+1 < len(annotations); i += 2 {
			x.Annotations[annotations[i]] = annotations[i+1]
		}
	}
	var out api.Execution
	if err := e.Create(Object(api.KindExecution, name, x)).Into(&out); err != nil {
		e.T.Fatal(err)
	}
	return &out
}

// Get reads a typed object; found is false when it does not exist.
func Get[T any](e *Env, kind, name string) (v T, found bool) {
	obj, err := e.C.Get(e.Ctx(), kind, NS, name)
	if err != nil {
		return v, false
	}
	if err := obj.Into(&v); err != nil {
		e.T.Fatalf("decode %s %s: %v", kind, name, err)
	}
	return v, true
}

// GetExecution reads an execution or fails the test.
func (e *Env) GetExecution(name string) api.Execution {
	e.T.Helper()
	x, ok := Get[api.Execution](e, api.KindExecution, name)
	if !ok {
		e.T.Fatalf("execution %s not found", name)
	}
	return x
}

// WaitExecution waits until the execution is up to date in phase.
func (e *Env) WaitExecution(name string, phase api.DeployPhase) api.Execution {
	e.T.Helper()
	var x api.Execution
	testkit.EventuallyNil(e.T, Wait, fmt.Sprintf("execution %s %s", name, phase), func() error {
		var ok bool
		if x, ok = Get[api.Execution](e, api.KindExecution, name); !ok {
			return fmt.Errorf("not found")
		}
		if x.Status.Phase != phase || x.Status.ObservedGeneration != x.Generation {
			return fmt.Errorf("phase %q observed %d of %d, lastError %+v", x.Status.Phase, x.Status.ObservedGeneration, x.Generation, x.Status.LastError)
		}
		return nil
	})
	return x
}

// WaitItem waits until the deploy item name satisfies cond.
func (e *Env) WaitItem(name, what string, cond func(api.DeployItem) bool) api.DeployItem {
	e.T.Helper()
	var d api.DeployItem
	testkit.EventuallyNil(e.T, Wait, "deploy item "+name+" "+what, func() error {
		var ok bool
		if d, ok = Get[api.DeployItem](e, api.KindDeployItem, name); !ok {
			return fmt.Errorf("not found")
		}
		if !cond(d) {
			return fmt.Errorf("phase %q observed %d of %d, lastError %+v, annotations %v", d.Status.Phase,
				d.Status.ObservedGeneration, d.Generation, d.Status.LastError, d.Annotations)
		}
		return nil
	})
	return d
}

// WaitGone waits until kind/name no longer exists.
func (e *Env) WaitGone(kind, name string) {
	e.T.Helper()
	testkit.Eventually(e.T, Wait, kind+" "+name+" gone", func() bool {
		_, err := e.C.Get(e.Ctx(), kind, NS, name)
		return err != nil
	})
}

// Delete deletes kind/name or fails the test.
func (e *Env) Delete(kind, name string) {
	e.T.Helper()
	if _, _, err := e.C.Delete(e.Ctx(), kind, NS, name, api.DeleteOptions{}); err != nil {
		e.T.Fatalf("delete %s %s: %v", kind, name, err)
	}
}

// Patch merge-patches kind/name or fails the test.
func (e *Env) Patch(kind, name, patch string) {
	e.T.Helper()
	if _, err := e.C.Patch(e.Ctx(), kind, NS, name, []byte(patch), false); err != nil {
		e.T.Fatalf("patch %s %s: %v", kind, name, err)
	}
}

// Data reads a DataObject's data.
func (e *Env) Data(name string) map[string]any {
	e.T.Helper()
	obj, err := e.C.Get(e.Ctx(), api.KindDataObject, NS, name)
	if err != nil {
		e.T.Fatalf("get DataObject %s: %v", name, err)
	}
	var m map[string]any
	if err := json.Unmarshal(obj.Field("data"), &m); err != nil {
		e.T.Fatalf("DataObject %s data: %v", name, err)
	}
	return m
}

// Explain returns the steps recorded for kind/name, one per line, with
// each reconcile's result.
func (e *Env) Explain(kind, name string) string {
	tr, ok := e.Traces.Get(kind, NS, name)
	if !ok || tr == nil {
		return ""
	}
	var b strings.Builder
	for _, r := range tr.Reconciles {
		fmt.Fprintf(&b, "[%s] %s\n", r.Controller, r.Result)
		for _, s := range r.Steps {
			fmt.Fprintf(&b, "  %s %s\n", s.Type, s.Message)
		}
	}
	return b.String()
}

// WaitExplain waits until the trace of kind/name says want.
func (e *Env) WaitExplain(kind, name, want string) {
	e.T.Helper()
	testkit.EventuallyNil(e.T, Wait, fmt.Sprintf("trace of %s %s saying %q", kind, name, want), func() error {
		if s := e.Explain(kind, name); !strings.Contains(s, want) {
			return fmt.Errorf("trace:\n%s", s)
		}
		return nil
	})
}

// Mock is a mock deploy item template.
func Mock(name string, config string, dependsOn ...string) api.DeployItemTemplate {
	return api.DeployItemTemplate{Name: name, Type: "mock", Config: json.RawMessage(config), DependsOn: dependsOn}
}

// NoTimeouts disables every deploy item timeout.
func NoTimeouts() deployitem.Timeouts {
	return deployitem.Timeouts{Pickup: -1, Aborting: -1, Progressing: -1}
}

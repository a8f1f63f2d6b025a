package installation_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/gc"
	"cairn.dev/cairn/installation"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/server/servertest"
	"cairn.dev/cairn/trace"
)

// wait is the bound of every wait: generous, for a loaded CI machine.
const wait = 60 * time.Second

// env is a real API server with the installation controller and the
// garbage collector running against it; the test plays the execution
// controller by writing Execution status through the API (finish), and
// releaseExecutions plays its deletion.
type env struct {
	t      *testing.T
	c      client.Interface
	ctx    context.Context
	traces *trace.Store
	ns     string
}

func start(t *testing.T) *env {
	t.Helper()
	s := servertest.Start(t)
	c := s.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	traces := trace.NewStore(10, 1000)
	m, err := manager.New(manager.Options{Client: c, Logger: log, Traces: traces, Controllers: []manager.Controller{
		{Name: "installation", Setup: func(tm *manager.Term) error {
			return installation.Setup(tm, installation.Options{Workers: 4})
		}},
		{Name: "gc", Standby: func(p *manager.Process) (func(*manager.Term) error, error) {
			return gc.Standby(p, gc.Options{})
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 2)
	e := &env{t: t, c: c, ctx: ctx, traces: traces, ns: "default"}
	go func() { _ = m.Run(ctx); done <- struct{}{} }()
	go func() { e.releaseExecutions(); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	return e
}

// releaseExecutions plays what the execution controller does by itself
// until the test ends (finish plays the rest): executions are created
// with its finalizer, which it removes from each execution being deleted
// (its deploy items, which the test made, go with it through the garbage
// collector); and the re-check that the reconcile annotation asks of a
// finished execution finds nothing to do and drops the annotation.
func (e *env) releaseExecutions() {
	for e.ctx.Err() == nil {
		w, err := e.c.Watch(e.ctx, api.KindExecution, e.ns, api.ListOptions{})
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		for ev := range w.Events() {
			o := ev.Object
			if o == nil {
				continue
			}
			// A Conflict on either write: the next event tries again.
			switch {
			case o.Deleting() && o.HasFinalizer(api.FinalizerExecution):
				next := o.DeepCopy()
				next.RemoveFinalizer(api.FinalizerExecution)
				_, _ = e.c.Update(e.ctx, next)
			case !o.Deleting() && o.Annotations[api.AnnotationOperation] == api.OperationReconcile:
				var x api.Execution
				if o.Into(&x) == nil && x.Status.ObservedGeneration == x.Generation && x.Status.Phase.Completed() {
					next := o.DeepCopy()
					delete(next.Annotations, api.AnnotationOperation)
					_, _ = e.c.Update(e.ctx, next)
				}
			}
		}
		w.Stop()
	}
}

// apply creates the YAML documents (separated by "---") in e.ns.
func (e *env) apply(docs string) {
	e.t.Helper()
	for _, doc := range strings.Split(docs, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var obj api.Object
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			e.t.Fatalf("decode %s: %v", doc, err)
		}
		if obj.APIVersion == "" {
			obj.APIVersion = api.APIVersion
		}
		if obj.Namespace == "" {
			obj.Namespace = e.ns
		}
		if _, err := e.c.Create(e.ctx, &obj); err != nil {
			e.t.Fatalf("create %s %s: %v", obj.Kind, obj.Name, err)
		}
	}
}

func (e *env) inst(name string) (*api.Installation, error) {
	return client.For[*api.Installation](e.c).Get(e.ctx, e.ns, name)
}

func (e *env) exec(name string) (*api.Execution, error) {
	return client.For[*api.Execution](e.c).Get(e.ctx, e.ns, name)
}

// waitInst waits until the installation satisfies cond; cond returns why
// not ("" when it holds).
func (e *env) waitInst(name, what string, cond func(in *api.Installation) string) *api.Installation {
	e.t.Helper()
	var last *api.Installation
	testkit.EventuallyNil(e.t, wait, fmt.Sprintf("installation %s: %s", name, what), func() error {
		in, err := e.inst(name)
		if err != nil {
			return err
		}
		last = in
		if why := cond(in); why != "" {
			return errors.New(why + " (status " + statusString(in) + ")")
		}
		return nil
	})
	return last
}

func statusString(in *api.Installation) string {
	b, _ := json.Marshal(in.Status)
	return string(b) + fmt.Sprintf(" annotations %v", in.Annotations)
}

// waitPhase waits for a phase.
func (e *env) waitPhase(name string, phase api.InstallationPhase) *api.Installation {
	e.t.Helper()
	return e.waitInst(name, "phase "+string(phase), func(in *api.Installation) string {
		if in.Status.Phase != phase {
			return "phase " + string(in.Status.Phase)
		}
		return ""
	})
}

// waitGone waits until an object is gone.
func (e *env) waitGone(kind, name string) {
	e.t.Helper()
	testkit.EventuallyNil(e.t, wait, kind+" "+name+" gone", func() error {
		obj, err := e.c.Get(e.ctx, kind, e.ns, name)
		if err == nil && kind == api.KindInstallation && time.Since(obj.CreationTimestamp) > wait-5*time.Second {
			raw, _ := json.Marshal(obj)
			e.t.Logf("%s %s still there: %s\ntrace:\n%s", kind, name, raw, e.explain(name))
		}
		if errors.Is(err, api.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return errors.New("still there")
	})
}

// finish plays the execution controller: it waits for the execution to
// exist at a generation newer than after, removes its operation
// annotation, and records phase for its current generation; exports (by
// deploy item name) are published the way deployers do, through a
// DeployItem's status.exportRef, and collected the way the execution
// controller does, into the DataObject its status.exportRef names. It
// returns the generation it finished.
func (e *env) finish(name string, after int64, phase api.DeployPhase, exports map[string]any) int64 {
	e.t.Helper()
	var gen int64
	testkit.EventuallyNil(e.t, wait, "finish execution "+name, func() error {
		ex, err := e.exec(name)
		if err != nil {
			in, _ := e.inst(name)
			if in != nil {
				return fmt.Errorf("%w; installation status %s; trace:\n%s", err, statusString(in), e.explain(name))
			}
			return err
		}
		if ex.Generation <= after && ex.Annotations[api.AnnotationOperation] == "" {
			return fmt.Errorf("execution at generation %d, waiting for one after %d", ex.Generation, after)
		}
		if ex.Annotations[api.AnnotationOperation] != "" {
			if ex, err = client.For[*api.Execution](e.c).Patch(e.ctx, e.ns, name,
				[]byte(`{"metadata":{"annotations":{"cairn.dev/operation":null}}}`), false); err != nil {
				return err
			}
		}
		var refs []api.DeployItemRef
		for _, it := range ex.Spec.DeployItems {
			diName := name + "-" + it.Name
			di := &api.DeployItem{ObjectMeta: api.ObjectMeta{Name: diName, Namespace: e.ns,
				OwnerReferences: []api.OwnerReference{api.OwnerRefTo(ex, true)}}, Spec: api.DeployItemSpec{Type: it.Type, Config: it.Config}}
			cur, err := client.For[*api.DeployItem](e.c).Get(e.ctx, e.ns, diName)
			if errors.Is(err, api.ErrNotFound) {
				cur, err = client.For[*api.DeployItem](e.c).Create(e.ctx, di)
			}
			if err != nil {
				return err
			}
			if v, ok := exports[it.Name]; ok {
				raw, _ := json.Marshal(v)
				doName := diName + "-exports"
				if _, err := client.For[*api.DataObject](e.c).Get(e.ctx, e.ns, doName); err == nil {
					_, err = client.For[*api.DataObject](e.c).Patch(e.ctx, e.ns, doName, fmt.Appendf(nil, `{"data":%s}`, raw), false)
					if err != nil {
						return err
					}
				} else if _, err := client.For[*api.DataObject](e.c).Create(e.ctx, &api.DataObject{ObjectMeta: api.ObjectMeta{Name: doName, Namespace: e.ns,
					OwnerReferences: []api.OwnerReference{api.OwnerRefTo(cur, true)}}, Data: raw}); err != nil {
					return err
				}
				cur.Status = api.DeployItemStatus{Phase: api.DeploySucceeded, ObservedGeneration: cur.Generation, ExportRef: doName}
				if _, err := client.For[*api.DeployItem](e.c).UpdateStatus(e.ctx, cur); err != nil {
					return err
				}
			}
			refs = append(refs, api.DeployItemRef{Name: it.Name, Ref: diName, ExecutionGeneration: ex.Generation, DeployItemGeneration: cur.Generation})
		}
		ex.Status = api.ExecutionStatus{Phase: phase, ObservedGeneration: ex.Generation, DeployItems: refs}
		if phase == api.DeploySucceeded {
			if ex.Status.ExportRef, err = e.collect(name, exports); err != nil {
				return err
			}
		}
		if phase == api.DeployFailed {
			ex.Status.LastError = &api.LastError{Reason: "DeployItemFailed", Message: "deploy item " + ex.Spec.DeployItems[0].Name + " failed: exit status 3"}
		}
		if _, err := client.For[*api.Execution](e.c).UpdateStatus(e.ctx, ex); err != nil {
			return err
		}
		gen = ex.Generation
		return nil
	})
	return gen
}

// collect writes the exports of an execution's deploy items into its
// export DataObject, as the execution controller does, and returns its
// name.
func (e *env) collect(execution string, exports map[string]any) (string, error) {
	name := execution + "-exports"
	raw, _ := json.Marshal(exports)
	dos := client.For[*api.DataObject](e.c)
	if _, err := dos.Get(e.ctx, e.ns, name); err == nil {
		_, err = dos.Patch(e.ctx, e.ns, name, []byte(`{"data":null}`), false)
		if err == nil {
			_, err = dos.Patch(e.ctx, e.ns, name, fmt.Appendf(nil, `{"data":%s}`, raw), false)
		}
		return name, err
	}
	_, err := dos.Create(e.ctx, &api.DataObject{ObjectMeta: api.ObjectMeta{Name: name, Namespace: e.ns}, Data: raw})
	return name, err
}

// explain returns the steps of the recent reconciles of an installation,
// newest last, one per line.
func (e *env) explain(name string) string {
	tr, ok := e.traces.Get(api.KindInstallation, e.ns, name)
	if !ok {
		return ""
	}
	var b strings.Builder
	for _, rec := range tr.Reconciles {
		for _, s := range rec.Steps {
			b.WriteString(s.Message + "\n")
		}
	}
	return b.String()
}

// waitExplain waits until the trace of an installation shows want (the
// trace is filed when a reconcile returns, after its writes).
func (e *env) waitExplain(name, want string) {
	e.t.Helper()
	testkit.EventuallyNil(e.t, wait, "trace of "+name+" shows "+want, func() error {
		if got := e.explain(name); !strings.Contains(got, want) {
			return errors.New("trace:\n" + got)
		}
		return nil
	})
}

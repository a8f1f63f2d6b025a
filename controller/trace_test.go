package controller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/trace"
)

// waitTrace waits until the store holds at least n reconciles of the
// object and returns its trace.
func waitTrace(t *testing.T, s *trace.Store, kind, ns, name string, n int) *api.Trace {
	t.Helper()
	var tr *api.Trace
	testkit.EventuallyNil(t, 10*time.Second, fmt.Sprintf("%d reconciles in the trace of %s %s/%s", n, kind, ns, name), func() error {
		var ok bool
		if tr, ok = s.Get(kind, ns, name); ok && len(tr.Reconciles) >= n {
			return nil
		}
		return fmt.Errorf("trace %+v", tr)
	})
	return tr
}

// calls counts the reconciles of each key.
type calls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) next(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
	return c.n[key]
}

func TestController_TracesEveryReconcileWithItsOutcome(t *testing.T) {
	var seen calls
	r := controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
		n := seen.next(key)
		ns, name, _ := strings.Cut(key, "/")
		trace.Object(ctx, "Secret", ns, name)
		trace.Check(ctx, "call %d", n)
		switch {
		case name == "done":
			trace.Exit(ctx, "nothing to do")
			return controller.Result{}, nil
		case name == "requeue":
			return controller.Result{RequeueAfter: 4*time.Minute + 59*time.Second + 990001234*time.Nanosecond}, nil // shown as people read it
		case name == "fails-once" && n == 1:
			return controller.Result{}, errors.New("store unavailable")
		case name == "terminal":
			return controller.Result{}, controller.Terminal(errors.New("spec.image is empty"))
		case name == "panics-once" && n == 1:
			panic("nil map")
		}
		return controller.Result{}, nil
	})
	store := trace.NewStore(0, 0)
	c := controller.New("secrets", r, controller.Options{Traces: store})
	for _, k := range []string{"ns/done", "ns/requeue", "ns/fails-once", "ns/terminal", "ns/panics-once"} {
		c.Enqueue(k)
	}
	start(t, c)

	cases := []struct {
		name    string
		results []string
		errs    []string
	}{
		{"done", []string{"done"}, []string{""}},
		{"requeue", []string{"requeue in 4m59.99s"}, []string{""}},
		{"fails-once", []string{"failed: store unavailable", "done"}, []string{"store unavailable", ""}},
		{"terminal", []string{"failed, not retried: spec.image is empty"}, []string{"spec.image is empty"}},
		{"panics-once", []string{"panicked: nil map", "done"}, []string{`controller: secrets: reconcile of "ns/panics-once" panicked: nil map`, ""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := waitTrace(t, store, "Secret", "ns", tc.name, len(tc.results))
			if len(tr.Reconciles) != len(tc.results) {
				t.Fatalf("reconciles = %+v", tr.Reconciles)
			}
			for i, rec := range tr.Reconciles {
				if rec.Result != tc.results[i] || rec.Error != tc.errs[i] {
					t.Errorf("reconcile %d: result %q error %q, want %q %q", i, rec.Result, rec.Error, tc.results[i], tc.errs[i])
				}
				if rec.Controller != "secrets" || rec.Key != "ns/"+tc.name || rec.End.Before(rec.Start) {
					t.Errorf("reconcile %d: %+v", i, rec)
				}
				if len(rec.Steps) == 0 || rec.Steps[0] != (api.TraceStep{Type: api.StepCheck, Message: fmt.Sprintf("call %d", i+1), Time: rec.Steps[0].Time}) {
					t.Errorf("reconcile %d steps = %+v", i, rec.Steps)
				}
			}
		})
	}
	if tr := waitTrace(t, store, "Secret", "ns", "done", 1); tr.Reconciles[0].Steps[1].Type != api.StepExit {
		t.Errorf("the exit step was not recorded: %+v", tr.Reconciles[0].Steps)
	}
}

func TestController_TraceFiledUnderNamedObjectOrTraceKind(t *testing.T) {
	cases := []struct {
		name      string
		traceKind string
		key       string
		object    *api.ObjectReference // what the reconciler names, if anything
		want      *api.ObjectReference // where the trace is filed; nil: dropped
	}{
		{"named object keyed by uid", "", "0b9e-4d2c",
			&api.ObjectReference{Kind: "Namespace", Name: "demo"}, &api.ObjectReference{Kind: "Namespace", Name: "demo"}},
		{"named object wins over the trace kind", "Secret", "ns/db",
			&api.ObjectReference{Kind: "Installation", Namespace: "ns", Name: "app"}, &api.ObjectReference{Kind: "Installation", Namespace: "ns", Name: "app"}},
		{"namespaced key of the trace kind", "Secret", "ns/db", nil, &api.ObjectReference{Kind: "Secret", Namespace: "ns", Name: "db"}},
		{"cluster-scoped key of the trace kind", "Namespace", "demo", nil, &api.ObjectReference{Kind: "Namespace", Name: "demo"}},
		{"unnamed without a trace kind is dropped", "", "ns/db", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := trace.NewStore(0, 0)
			r := controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
				if key == "sentinel" {
					trace.Object(ctx, "Sentinel", "", "sentinel")
					return controller.Result{}, nil
				}
				if tc.object != nil {
					trace.Object(ctx, tc.object.Kind, tc.object.Namespace, tc.object.Name)
				}
				trace.Action(ctx, "reconciled %s", key)
				return controller.Result{}, nil
			})
			c := controller.New("c", r, controller.Options{Traces: store, TraceKind: tc.traceKind})
			c.Enqueue(tc.key)
			c.Enqueue("sentinel") // one worker: its trace appears after the key's
			start(t, c)
			waitTrace(t, store, "Sentinel", "", "sentinel", 1)
			if tc.want == nil {
				if store.Len() != 1 {
					t.Errorf("store holds %d objects, want only the sentinel", store.Len())
				}
				return
			}
			tr, ok := store.Get(tc.want.Kind, tc.want.Namespace, tc.want.Name)
			if !ok {
				t.Fatalf("no trace under %v", *tc.want)
			}
			if tr.Object != *tc.want || tr.Reconciles[0].Key != tc.key || tr.Reconciles[0].Steps[0].Message != "reconciled "+tc.key {
				t.Errorf("trace = %+v", tr)
			}
		})
	}
}

func TestController_WithoutTracesReconcilerSeesNoRecorder(t *testing.T) {
	got := make(chan bool, 1)
	r := controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
		got <- trace.From(ctx) != nil
		trace.Check(ctx, "harmless without a recorder")
		return controller.Result{}, nil
	})
	c := controller.New("c", r, controller.Options{TraceKind: "Secret"})
	c.Enqueue("ns/db")
	start(t, c)
	select {
	case has := <-got:
		if has {
			t.Error("a controller without Options.Traces put a recorder on the context")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not reconciled")
	}
}

func TestController_TracesBoundedPerObject(t *testing.T) {
	store := trace.NewStore(3, 0)
	var seen calls
	r := controller.ReconcilerFunc(func(ctx context.Context, key string) (controller.Result, error) {
		trace.Check(ctx, "call %d", seen.next(key))
		return controller.Result{}, nil
	})
	c := controller.New("c", r, controller.Options{Traces: store, TraceKind: "Secret"})
	start(t, c)
	for i := 1; i <= 5; i++ {
		c.Enqueue("ns/db")
		testkit.Eventually(t, 10*time.Second, fmt.Sprintf("call %d traced", i), func() bool {
			tr, ok := store.Get("Secret", "ns", "db")
			return ok && tr.Reconciles[len(tr.Reconciles)-1].Steps[0].Message == fmt.Sprintf("call %d", i)
		})
	}
	tr, _ := store.Get("Secret", "ns", "db")
	var got []string
	for _, rec := range tr.Reconciles {
		got = append(got, rec.Steps[0].Message)
	}
	if fmt.Sprint(got) != "[call 3 call 4 call 5]" {
		t.Errorf("kept %v, want the last three oldest first", got)
	}
}

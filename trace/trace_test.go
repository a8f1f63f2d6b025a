package trace_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/trace"
)

// clock is a fake clock advancing one millisecond per reading.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func TestRecorder_RecordsStepsInOrderWithObjectAndResult(t *testing.T) {
	clk := newClock()
	r := trace.NewRecorder("installation", "demo/app", clk.now)
	ctx := trace.With(context.Background(), r)
	trace.Object(ctx, "Installation", "demo", "app")
	trace.Subflow(ctx, "imports")
	trace.Check(ctx, "sibling %s is %s", "database", "Progressing")
	trace.Action(ctx, "set condition %s", "Ready=False")
	trace.Exit(ctx, "PendingDependencies: import `%s` waits for sibling `%s` (%s)", "db", "database", "Progressing")
	ref, rec, ok := r.Finish("requeue in 5s", nil)

	if !ok || ref != (api.ObjectReference{Kind: "Installation", Namespace: "demo", Name: "app"}) {
		t.Errorf("object = %v, %v", ref, ok)
	}
	if rec.Controller != "installation" || rec.Key != "demo/app" || rec.Result != "requeue in 5s" || rec.Error != "" {
		t.Errorf("record = %+v", rec)
	}
	want := []struct {
		typ api.StepType
		msg string
	}{
		{api.StepSubflow, "imports"},
		{api.StepCheck, "sibling database is Progressing"},
		{api.StepAction, "set condition Ready=False"},
		{api.StepExit, "PendingDependencies: import `db` waits for sibling `database` (Progressing)"},
	}
	if len(rec.Steps) != len(want) {
		t.Fatalf("steps = %+v", rec.Steps)
	}
	prev := rec.Start
	for i, w := range want {
		s := rec.Steps[i]
		if s.Type != w.typ || s.Message != w.msg {
			t.Errorf("step %d = %s %q, want %s %q", i, s.Type, s.Message, w.typ, w.msg)
		}
		if !s.Time.After(prev) {
			t.Errorf("step %d at %v, not after %v", i, s.Time, prev)
		}
		prev = s.Time
	}
	if !rec.End.After(prev) {
		t.Errorf("end %v not after the last step %v", rec.End, prev)
	}
}

func TestRecorder_FinishCarriesErrorAndUnnamedObjectIsNotOK(t *testing.T) {
	r := trace.NewRecorder("gc", "0b9e-uid", nil)
	ref, rec, ok := r.Finish("failed: boom", errors.New("boom"))
	if ok || ref != (api.ObjectReference{}) {
		t.Errorf("unnamed object = %v, %v; want zero, false", ref, ok)
	}
	if rec.Error != "boom" || rec.Result != "failed: boom" || rec.Key != "0b9e-uid" {
		t.Errorf("record = %+v", rec)
	}
}

func TestRecorder_StepsAfterFinishAreIgnored(t *testing.T) {
	r := trace.NewRecorder("c", "k", nil)
	ctx := trace.With(context.Background(), r)
	trace.Check(ctx, "before")
	r.Finish("done", nil)
	trace.Action(ctx, "after")
	trace.Object(ctx, "Secret", "ns", "late")
	ref, rec, ok := r.Finish("done", nil)
	if len(rec.Steps) != 1 || rec.Steps[0].Message != "before" || ok || ref.Name != "" {
		t.Errorf("after Finish: %v %v %+v", ref, ok, rec.Steps)
	}
}

func TestRecorder_BoundsStepsAndCountsTheRest(t *testing.T) {
	for _, n := range []int{0, 1, trace.MaxSteps - 1, trace.MaxSteps, trace.MaxSteps + 1, 3 * trace.MaxSteps} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			r := trace.NewRecorder("c", "k", nil)
			ctx := trace.With(context.Background(), r)
			for i := range n {
				trace.Check(ctx, "step %d", i)
			}
			_, rec, _ := r.Finish("done", nil)
			kept := min(n, trace.MaxSteps)
			if len(rec.Steps) != kept || rec.Truncated != n-kept {
				t.Fatalf("kept %d, truncated %d; want %d, %d", len(rec.Steps), rec.Truncated, kept, n-kept)
			}
			if kept > 0 && rec.Steps[kept-1].Message != fmt.Sprintf("step %d", kept-1) {
				t.Errorf("last kept step = %q; the first steps must be kept", rec.Steps[kept-1].Message)
			}
		})
	}
}

func TestRecorder_ClipsLongMessagesOnRuneBoundaries(t *testing.T) {
	r := trace.NewRecorder("c", "k", nil)
	ctx := trace.With(context.Background(), r)
	long := strings.Repeat("é", trace.MaxMessageBytes) // two bytes each
	trace.Check(ctx, "%s", long)
	_, rec, _ := r.Finish(long, errors.New(long))
	for name, s := range map[string]string{"message": rec.Steps[0].Message, "result": rec.Result, "error": rec.Error} {
		if len(s) > trace.MaxMessageBytes || !utf8.ValidString(s) || !strings.HasSuffix(s, "…") {
			t.Errorf("%s: %d bytes, valid %v, ends %q", name, len(s), utf8.ValidString(s), s[len(s)-6:])
		}
	}
}

func TestTrace_FunctionsAreNoOpsWithoutRecorder(t *testing.T) {
	ctx := context.Background()
	if trace.From(ctx) != nil {
		t.Fatal("From found a recorder on a bare context")
	}
	if trace.With(ctx, nil) != ctx {
		t.Error("With(ctx, nil) changed the context")
	}
	// A Stringer that fails the test proves no message is formatted.
	bomb := stringer(func() string { t.Error("a message was formatted without a recorder"); return "" })
	trace.Object(ctx, "Secret", "ns", "x")
	trace.Check(ctx, "%v", bomb)
	trace.Exit(ctx, "%v", bomb)
	trace.Subflow(ctx, "%v", bomb)
	trace.Action(ctx, "%v", bomb)
}

type stringer func() string

func (s stringer) String() string { return s() }

func TestRecorder_SafeForConcurrentSteps(t *testing.T) {
	r := trace.NewRecorder("c", "k", nil)
	ctx := trace.With(context.Background(), r)
	const goroutines, each = 8, 50
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				trace.Action(ctx, "worker %d step %d", g, i)
				trace.Object(ctx, "Secret", "ns", "x")
			}
		})
	}
	wg.Wait()
	_, rec, ok := r.Finish("done", nil)
	if !ok || len(rec.Steps)+rec.Truncated != goroutines*each || len(rec.Steps) != trace.MaxSteps {
		t.Errorf("kept %d + truncated %d, want %d (%d kept)", len(rec.Steps), rec.Truncated, goroutines*each, trace.MaxSteps)
	}
}

func rec(result string) api.TraceReconcile {
	return api.TraceReconcile{Controller: "c", Key: "k", Result: result,
		Steps: []api.TraceStep{{Type: api.StepCheck, Message: result}}}
}

func ref(name string) api.ObjectReference {
	return api.ObjectReference{Kind: "Secret", Namespace: "ns", Name: name}
}

func results(tr *api.Trace) []string {
	var out []string
	for _, r := range tr.Reconciles {
		out = append(out, r.Result)
	}
	return out
}

func TestStore_KeepsLastReconcilesPerObjectOldestFirst(t *testing.T) {
	cases := []struct {
		perObject, adds int
		want            []string
	}{
		{perObject: 3, adds: 1, want: []string{"r0"}},
		{perObject: 3, adds: 3, want: []string{"r0", "r1", "r2"}},
		{perObject: 3, adds: 4, want: []string{"r1", "r2", "r3"}},
		{perObject: 3, adds: 10, want: []string{"r7", "r8", "r9"}},
		{perObject: 1, adds: 5, want: []string{"r4"}},
		{perObject: 0, adds: 12, want: []string{"r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11"}}, // default 10
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%d-of-%d", c.perObject, c.adds), func(t *testing.T) {
			s := trace.NewStore(c.perObject, 0)
			for i := range c.adds {
				s.Add(ref("db"), rec(fmt.Sprintf("r%d", i)))
			}
			tr, ok := s.Get("Secret", "ns", "db")
			if !ok {
				t.Fatal("no trace")
			}
			if got := results(tr); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("reconciles = %v, want %v", got, c.want)
			}
			if tr.APIVersion != api.APIVersion || tr.Kind != api.KindTrace || tr.Object != ref("db") {
				t.Errorf("trace header = %+v %+v", tr.TypeMeta, tr.Object)
			}
		})
	}
}

func TestStore_EvictsLeastRecentlyUpdatedObject(t *testing.T) {
	s := trace.NewStore(2, 3)
	for _, n := range []string{"a", "b", "c"} {
		s.Add(ref(n), rec(n))
	}
	s.Add(ref("a"), rec("a2")) // a is now the most recently updated; b the least
	s.Add(ref("d"), rec("d"))
	if s.Len() != 3 {
		t.Errorf("Len = %d, want 3", s.Len())
	}
	for n, want := range map[string]bool{"a": true, "b": false, "c": true, "d": true} {
		if _, ok := s.Get("Secret", "ns", n); ok != want {
			t.Errorf("trace of %s kept = %v, want %v", n, ok, want)
		}
	}
	if tr, _ := s.Get("Secret", "ns", "a"); fmt.Sprint(results(tr)) != "[a a2]" {
		t.Errorf("a = %v", results(tr))
	}
}

func TestStore_GetMissesOtherKindsNamespacesAndNames(t *testing.T) {
	s := trace.NewStore(0, 0)
	s.Add(ref("db"), rec("x"))
	s.Add(api.ObjectReference{Kind: "Namespace", Name: "ns"}, rec("y"))
	for _, q := range [][3]string{{"Namespace", "ns", "db"}, {"Secret", "", "db"}, {"Secret", "ns", "dc"}, {"Secret", "other", "db"}} {
		if _, ok := s.Get(q[0], q[1], q[2]); ok {
			t.Errorf("Get%v found a trace", q)
		}
	}
	if _, ok := s.Get("Namespace", "", "ns"); !ok {
		t.Error("cluster-scoped trace not found")
	}
}

func TestStore_GetReturnsACopy(t *testing.T) {
	s := trace.NewStore(0, 0)
	in := rec("x")
	s.Add(ref("db"), in)
	in.Steps[0].Message = "changed by the caller after Add"
	tr, _ := s.Get("Secret", "ns", "db")
	tr.Reconciles[0].Steps[0].Message = "changed by a reader"
	tr.Reconciles[0].Result = "changed"
	again, _ := s.Get("Secret", "ns", "db")
	if got := again.Reconciles[0]; got.Steps[0].Message != "x" || got.Result != "x" {
		t.Errorf("stored reconcile changed: %+v", got)
	}
}

func TestStore_SafeForConcurrentUse(t *testing.T) {
	s := trace.NewStore(5, 20)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				n := fmt.Sprintf("o%d", (g*200+i)%40)
				s.Add(ref(n), rec(fmt.Sprint(i)))
				if tr, ok := s.Get("Secret", "ns", n); ok && len(tr.Reconciles) > 5 {
					t.Errorf("%s has %d reconciles", n, len(tr.Reconciles))
				}
				_ = s.Len()
			}
		})
	}
	wg.Wait()
	if s.Len() != 20 {
		t.Errorf("Len = %d, want the bound 20", s.Len())
	}
}

package gc

import (
	"context"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/trace"
)

// TestTraceCascade_SaysWhatHoldsEachRemainingDependent checks the steps a
// cascade records: one line counting what is left, one action per deletion
// and detachment, and an exit naming what holds each dependent waited for
// (its finalizer, its controller owner, its other live owner).
func TestTraceCascade_SaysWhatHoldsEachRemainingDependent(t *testing.T) {
	owner := del(thing("owner"), "example.com/own")
	other := thing("other")
	g := graphOf(owner, other,
		thing("gone", "owner"),
		thing("shared", "owner", "other"),
		ctl(thing("managed", "owner"), "owner"),
		del(thing("held", "owner"), "example.com/hold"),
	)
	c := &Collector{graph: g, requested: map[string]struct{}{}}
	cs := PlanCascade(g, "owner")
	w := work{self: owner, d: Decision{Cascade: &cs}, explain: c.explain("owner", &cs)}
	for _, v := range cs.Delete {
		n, _ := g.Node(v.UID)
		w.victims = append(w.victims, target{Node: n})
	}
	rec := trace.NewRecorder("gc", "owner", time.Now)
	ctx := trace.With(context.Background(), rec)
	trace.Object(ctx, "Thing", "ns", "owner")
	traceCascade(ctx, owner, w)
	_, r, ok := rec.Finish("done", nil)
	if !ok {
		t.Fatal("no trace recorded")
	}
	var lines []string
	for _, s := range r.Steps {
		lines = append(lines, s.Type.Symbol()+" "+s.Message)
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"❔ deleting: 4 dependents left (1 to delete, 1 already deleting, 1 left to their controller, 1 to detach)",
		"✔️ delete Thing ns/gone",
		"✔️ detach Thing ns/shared: it keeps its live owner Thing other",
		"🚪 waits for Thing ns/managed: its controller owner Thing owner deletes it in its own order",
		"🚪 waits for Thing ns/held: it is deleting; its own dependents go first, and finalizer example.com/hold (not the collector's) holds it",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("trace lacks %q:\n%s", want, got)
		}
	}
}

func TestHolds_NamesTheFinalizersThatAreNotTheCollectors(t *testing.T) {
	for _, tc := range []struct {
		finalizers []string
		want       string
	}{
		{[]string{api.FinalizerCascadeDeletion}, "its own dependents go first"},
		{[]string{"example.com/a"}, "finalizer example.com/a holds it until the controller that set it removes it"},
		{[]string{api.FinalizerCascadeDeletion, "example.com/a", "example.com/b"}, "finalizer example.com/a, example.com/b (not the collector's)"},
	} {
		if got := holds(Node{Finalizers: tc.finalizers}); !strings.Contains(got, tc.want) {
			t.Errorf("holds(%v) = %q, want it to say %q", tc.finalizers, got, tc.want)
		}
	}
}

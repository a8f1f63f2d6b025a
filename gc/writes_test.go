package gc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/server/servertest"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestCollectorDelete_ConflictIsRetriedUnlessTheVictimIsGoneOrReplaced
// drives the collector's delete against a real server: a Conflict on a
// victim that is still there is an error (the owner is retried), one on a
// victim replaced by another object of the same name is not, nor is a
// victim already gone.
func TestCollectorDelete_ConflictIsRetriedUnlessTheVictimIsGoneOrReplaced(t *testing.T) {
	ctx := context.Background()
	ch := NewChurn(t)
	ts := servertest.Start(t, servertest.WithKinds(append(kinds.All(kinds.Deps{}), ch.Kind())...))
	cc := &ConflictCounter{Interface: local.New(ts.Registry, identity.System())}
	// The first Delete of a churning Widget loses every race, once.
	ch.Start(ts.Registry, func() bool { return cc.Conflicts() == 0 })
	create := func(o *api.Object) *api.Object {
		t.Helper()
		out, err := cc.Create(ctx, o)
		if err != nil {
			t.Fatalf("create %s: %v", o.Name, err)
		}
		return out
	}
	create(testkit.Object(NamespaceKind, "", "gc"))
	busy := create(testkit.Widget("gc", "busy", testkit.Labels(LabelChurn, "true")))
	replaced := create(testkit.Widget("gc", "replaced"))
	c := newCollector(cc, Options{}, nil, discard(), nil)

	for _, tc := range []struct {
		name         string
		node         Node
		wantErr      bool // a Conflict to retry
		wantConflict bool // Delete answered Conflict
		after        *api.Object
		wantAfter    string
	}{
		{name: "victim still there after the API gave up is retried",
			node: NodeOf(busy), wantErr: true, wantConflict: true, after: busy, wantAfter: "live"},
		{name: "victim retried once the object is quiet is deleted",
			node: NodeOf(busy), after: busy, wantAfter: "deleting"},
		{name: "victim replaced by another object of the same name is skipped",
			node:         Node{Kind: WidgetKind, Namespace: "gc", Name: replaced.Name, UID: "uid-of-an-older-replaced"},
			wantConflict: true, after: replaced, wantAfter: "live"},
		{name: "victim gone is skipped",
			node: Node{Kind: WidgetKind, Namespace: "gc", Name: "never-was", UID: "uid-never-was"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := cc.Conflicts()
			wait, err := c.delete(ctx, tc.node, false, "cascade")
			if wait != 0 {
				t.Errorf("requeue after %v, want none", wait)
			}
			if got := cc.Conflicts() > before; got != tc.wantConflict {
				t.Fatalf("Delete answered Conflict: %v, want %v", got, tc.wantConflict)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("delete: err = %v, want error: %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, api.ErrConflict) {
				t.Fatalf("delete: err = %v, want it to wrap the Conflict", err)
			}
			if tc.after == nil {
				return
			}
			cur, err := cc.Get(ctx, WidgetKind, "gc", tc.after.Name)
			if err != nil {
				t.Fatal(err)
			}
			state := "live"
			if cur.Deleting() {
				state = "deleting"
			}
			if cur.UID != tc.after.UID || state != tc.wantAfter {
				t.Fatalf("%s is %s (uid %s), want %s (uid %s)", tc.after.Name, state, cur.UID, tc.wantAfter, tc.after.UID)
			}
		})
	}
	if ch.Writes.Load() == 0 {
		t.Fatal("the churn never modified the victim: the test proves nothing")
	}
}

// TestCollectorDelete_RefusalBacksOffAndWarnsOnce: the API refuses to
// delete the default namespace; the collector asks to be retried after a
// doubling delay, capped, warns once per object, and counts again once the
// object left the graph.
func TestCollectorDelete_RefusalBacksOffAndWarnsOnce(t *testing.T) {
	ctx := context.Background()
	ts := servertest.Start(t)
	cl := local.New(ts.Registry, identity.System())
	rec := &LogRecorder{}
	const base = 10 * time.Millisecond
	c := newCollector(cl, Options{ConfirmRetry: base}, nil, slog.New(rec), nil)
	def, err := cl.Get(ctx, NamespaceKind, "", api.DefaultNamespace)
	if err != nil {
		t.Fatal(err)
	}
	n := NodeOf(def)
	c.graph.Put(n)

	var got []time.Duration
	for range 5 {
		wait, err := c.delete(ctx, n, true, "cascade")
		if err != nil {
			t.Fatalf("refused delete: err = %v, want none (a requeue)", err)
		}
		got = append(got, wait)
	}
	want := []time.Duration{base, 2 * base, 4 * base, 8 * base, 16 * base}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("requeue delays = %v, want %v", got, want)
		}
	}
	if w, d := rec.Count(slog.LevelWarn, msgRefused), rec.Count(slog.LevelDebug, msgRefused); w != 1 || d != 4 {
		t.Fatalf("refusals logged %d times as warnings and %d at debug level, want 1 and 4", w, d)
	}
	if s, err := cl.Get(ctx, NamespaceKind, "", api.DefaultNamespace); err != nil || s.Deleting() {
		t.Fatalf("default namespace: %v, deleting %v", err, s != nil && s.Deleting())
	}

	c.mu.Lock()
	c.refused[n.UID] = 1000
	c.mu.Unlock()
	if wait, _ := c.delete(ctx, n, false, "cascade"); wait != maxRefusalRetry {
		t.Fatalf("after many refusals the delay is %v, want the cap %v", wait, maxRefusalRetry)
	}

	c.forget(def)
	c.graph.Put(n)
	if wait, _ := c.delete(ctx, n, false, "cascade"); wait != base {
		t.Fatalf("after the object left the graph the delay is %v, want %v again", wait, base)
	}
	if w := rec.Count(slog.LevelWarn, msgRefused); w != 2 {
		t.Fatalf("warnings = %d, want a second one for the object seen anew", w)
	}
}

// TestNewMetrics_SecondCollectorOnOneRegistryReusesTheMetrics: building
// the metrics twice on one registry (a new Collector per leader term)
// gives two working handles on the same series; a metric of another shape
// in the way disables them, with no panic.
func TestNewMetrics_SecondCollectorOnOneRegistryReusesTheMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := newMetrics(reg, discard())
	second := newMetrics(reg, discard())
	if first == nil || second == nil {
		t.Fatalf("metrics: first %v, second %v; want both", first, second)
	}
	first.action("cascade")
	second.action("cascade")
	second.setNodes(7)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var actions, nodes float64
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "cairn_gc_actions_total":
				actions += m.GetCounter().GetValue()
			case "cairn_gc_graph_nodes":
				nodes = m.GetGauge().GetValue()
			}
		}
	}
	if actions != 2 || nodes != 7 {
		t.Fatalf("cairn_gc_actions_total = %v, cairn_gc_graph_nodes = %v; want 2 and 7", actions, nodes)
	}

	other := prometheus.NewRegistry()
	other.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_gc_actions_total", Help: "in the way"}))
	if m := newMetrics(other, discard()); m != nil {
		t.Fatal("metrics registered over a metric of another shape")
	}
}

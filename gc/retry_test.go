package gc_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/gc"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/server/servertest"
)

func TestCollector_CascadeFinishesWhenTheVictimsDeleteAnswersConflict(t *testing.T) {
	ch := gc.NewChurn(t)
	e := newEnv(t, false, servertest.WithKinds(append(kinds.All(kinds.Deps{}), ch.Kind())...))
	cc := &gc.ConflictCounter{Interface: e.c}
	// The victim changes under every delete attempt until the collector
	// has been answered Conflict twice.
	ch.Start(e.ts.Registry, func() bool { return cc.Conflicts() < 2 })
	e.startCollector(cc, gc.Options{Workers: 4, ConfirmRetry: 50 * time.Millisecond}, manager.Options{Logger: testLogger()})
	root := e.secret("root")
	busy := e.create(testkit.Widget(ns, "busy", testkit.Labels(gc.LabelChurn, "true"), testkit.OwnedBy(root)))
	below := e.secret("below", testkit.OwnedBy(busy)) // busy is no leaf: it is marked, not removed
	e.del(root, false)
	e.allGone(root, busy, below)
	if n := cc.Conflicts(); n < 2 {
		t.Fatalf("Delete answered Conflict %d times, want at least 2: the test proves nothing", n)
	}
	if ch.Writes.Load() == 0 {
		t.Fatal("the victim was never modified during its deletion")
	}
}

func TestCollector_RefusedDeletionIsLoggedOnceAndRetriedWithBackoff(t *testing.T) {
	e := newEnv(t, false)
	rec := &gc.LogRecorder{}
	const base = 20 * time.Millisecond
	e.startCollector(e.c, gc.Options{ConfirmRetry: base}, manager.Options{Logger: slog.New(rec)})
	parent := e.create(testkit.Object(gc.NamespaceKind, "", "parent"))
	def, err := e.get(gc.NamespaceKind, "", api.DefaultNamespace)
	if err != nil {
		t.Fatal(err)
	}
	// The API never deletes the default namespace: a cascade reaching it
	// is refused (Forbidden).
	e.setOwners(def, parent)
	e.del(parent, false)
	const refusals = 4
	e.eventually("refusals logged", func() string {
		if n := len(rec.Records(gc.MsgRefused)); n < refusals {
			return fmt.Sprintf("%d refusals", n)
		}
		return ""
	})
	recs := rec.Records(gc.MsgRefused)
	if w := rec.Count(slog.LevelWarn, gc.MsgRefused); w != 1 || recs[0].Level != slog.LevelWarn {
		t.Fatalf("%d warnings (first record at %v), want exactly one, first", w, recs[0].Level)
	}
	// Each retry waited for the delay asked for after the refusal before,
	// and the delay doubled: no busy loop.
	for i := 1; i < refusals; i++ {
		asked := gc.Attr(recs[i-1], "retryAfter").Duration()
		if want := base << (i - 1); asked != want {
			t.Fatalf("refusal %d asked for a retry after %v, want %v", i, asked, want)
		}
		if gap := recs[i].Time.Sub(recs[i-1].Time); gap < asked {
			t.Fatalf("refusal %d came %v after the one before, which asked to wait %v", i+1, gap, asked)
		}
	}
	if s := e.state(parent); s != "deleting" {
		t.Fatalf("parent is %s, want deleting while its dependent cannot go", s)
	}
	if s := e.state(def); s != "live" {
		t.Fatalf("default namespace is %s", s)
	}
	// Once nothing stands in its way the cascade finishes.
	e.setOwners(def)
	e.allGone(parent)
	if s := e.state(def); s != "live" {
		t.Fatalf("default namespace is %s", s)
	}
}

func TestCollector_RestartedInTheSameProcessKeepsReportingMetrics(t *testing.T) {
	e := newEnv(t, false)
	reg := prometheus.NewRegistry()
	for term := 1; term <= 2; term++ {
		// A new Collector per leader term, on the daemon's one registry.
		stop := e.startGCWith(reg)
		owner := e.secret(fmt.Sprintf("owner-%d", term))
		orphan := e.secret(fmt.Sprintf("orphan-%d", term), testkit.OwnedBy(owner))
		e.del(owner, true)
		e.allGone(orphan)
		e.eventually(fmt.Sprintf("term %d: orphan deletion counted", term), func() string {
			if v := counterValue(t, reg, "cairn_gc_actions_total", "action", "orphan"); v != float64(term) {
				return fmt.Sprintf("orphan deletions counted %v, want %d", v, term)
			}
			return ""
		})
		stop()
	}
}

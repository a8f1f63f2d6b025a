package gc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
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

const (
	ns   = "gc"
	hold = "test.cairn.dev/hold" // a controller's own finalizer
)

// env is a real API server with a collector running against it.
type env struct {
	t  testing.TB
	ts *servertest.Server
	c  client.Interface
}

// newEnv starts a server (built with opts) and the namespace ns; the
// client is in-process, or over HTTP when http is true.
func newEnv(t testing.TB, http bool, opts ...servertest.Option) *env {
	t.Helper()
	ts := servertest.Start(t, opts...)
	var c client.Interface = local.New(ts.Registry, identity.System())
	if http {
		hc, err := client.NewHTTP(ts.Config())
		if err != nil {
			t.Fatal(err)
		}
		c = hc
	}
	e := &env{t: t, ts: ts, c: c}
	e.create(testkit.Object(gc.NamespaceKind, "", ns))
	return e
}

// startGC runs a collector until the returned stop is called (or the test
// ends); stop waits for Run to return.
func (e *env) startGC() (stop func()) {
	e.t.Helper()
	return e.startGCWith(nil)
}

// startGCWith is startGC exporting metrics to reg (when not nil).
func (e *env) startGCWith(reg prometheus.Registerer) (stop func()) {
	e.t.Helper()
	return e.startCollector(e.c, gc.Options{Workers: 16, ConfirmRetry: 50 * time.Millisecond},
		manager.Options{Metrics: reg, Logger: testLogger()})
}

// startCollector runs a collector acting through c, built with opts, in a
// manager with the logger, metrics and traces of mo (as a process runs it:
// gc.Standby), until the returned stop is called (or the test ends); stop
// waits for the manager to return.
func (e *env) startCollector(c client.Interface, opts gc.Options, mo manager.Options) (stop func()) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	mo.Client = c
	mo.Controllers = []manager.Controller{{Name: "gc", Standby: func(p *manager.Process) (func(*manager.Term) error, error) {
		return gc.Standby(p, opts)
	}}}
	m, err := manager.New(mo)
	if err != nil {
		e.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("collector Run: %v", err)
		}
	}
	e.t.Cleanup(stop)
	return stop
}

// testLogger discards logs unless GC_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("GC_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func (e *env) create(o *api.Object) *api.Object {
	e.t.Helper()
	out, err := e.c.Create(context.Background(), o)
	if err != nil {
		e.t.Fatalf("create %s %s: %v", o.Kind, o.Name, err)
	}
	return out
}

// secret creates the Secret name in ns with opts (owners, finalizers).
func (e *env) secret(name string, opts ...testkit.Opt) *api.Object {
	e.t.Helper()
	return e.create(testkit.Secret(ns, name, nil, opts...))
}

func (e *env) get(kind, namespace, name string) (*api.Object, error) {
	return e.c.Get(context.Background(), kind, namespace, name)
}

func (e *env) del(o *api.Object, force bool) {
	e.t.Helper()
	if _, _, err := e.c.Delete(context.Background(), o.Kind, o.Namespace, o.Name,
		api.DeleteOptions{Force: force}); err != nil {
		e.t.Fatalf("delete %s: %v", o.Name, err)
	}
}

// update re-reads o, applies change and writes it, retrying on Conflict.
func (e *env) update(o *api.Object, change func(*api.Object)) {
	e.t.Helper()
	for {
		cur, err := e.get(o.Kind, o.Namespace, o.Name)
		if err != nil {
			e.t.Fatalf("update %s: %v", o.Name, err)
		}
		change(cur)
		if _, err = e.c.Update(context.Background(), cur); err == nil {
			return
		}
		if !errors.Is(err, api.ErrConflict) {
			e.t.Fatalf("update %s: %v", o.Name, err)
		}
	}
}

// eventually polls cond until it returns "" (success) or fails the test
// with cond's last explanation after a generous timeout.
func (e *env) eventually(what string, cond func() string) {
	e.t.Helper()
	testkit.EventuallyNil(e.t, 30*time.Second, what, func() error {
		if why := cond(); why != "" {
			return errors.New("still " + why)
		}
		return nil
	})
}

// setOwners makes owners the only owners of o (none: no owner).
func (e *env) setOwners(o *api.Object, owners ...*api.Object) {
	e.t.Helper()
	e.update(o, func(cur *api.Object) {
		cur.OwnerReferences = nil
		for _, w := range owners {
			cur.OwnerReferences = append(cur.OwnerReferences, api.OwnerRefTo(w, false))
		}
	})
}

// allGone waits until none of objs exists any more.
func (e *env) allGone(objs ...*api.Object) {
	e.t.Helper()
	e.eventually("every object deleted", func() string {
		for _, o := range objs {
			_, err := e.get(o.Kind, o.Namespace, o.Name)
			if err == nil {
				return fmt.Sprintf("%s %s present", o.Kind, o.Name)
			}
			if !errors.Is(err, api.ErrNotFound) {
				return err.Error()
			}
		}
		return ""
	})
}

// state reads o: "live", "deleting" or "gone".
func (e *env) state(o *api.Object) string {
	e.t.Helper()
	cur, err := e.get(o.Kind, o.Namespace, o.Name)
	switch {
	case errors.Is(err, api.ErrNotFound):
		return "gone"
	case err != nil:
		e.t.Fatalf("get %s: %v", o.Name, err)
	case cur.UID != o.UID:
		return "replaced"
	case cur.Deleting():
		return "deleting"
	}
	return "live"
}

func (e *env) waitState(o *api.Object, want string) {
	e.t.Helper()
	e.eventually(o.Name+" "+want, func() string {
		if s := e.state(o); s != want {
			return s
		}
		return ""
	})
}

func TestCollector_CascadeReachesDepthThree(t *testing.T) {
	for _, transport := range []string{"local", "http"} {
		t.Run(transport, func(t *testing.T) {
			e := newEnv(t, transport == "http")
			e.startGC()
			root := e.secret("root")
			a := e.secret("a", testkit.OwnedBy(root))
			a2 := e.secret("a2", testkit.OwnedBy(root))
			b := e.secret("b", testkit.OwnedBy(a))
			c := e.secret("c", testkit.OwnedBy(b))
			bystander := e.secret("bystander")
			e.del(root, false)
			e.allGone(root, a, a2, b, c)
			if s := e.state(bystander); s != "live" {
				t.Fatalf("unrelated object is %s", s)
			}
		})
	}
}

func TestCollector_DependentWithLiveSecondOwnerSurvivesAndLosesTheReference(t *testing.T) {
	e := newEnv(t, false)
	e.startGC()
	first := e.secret("first")
	second := e.secret("second")
	shared := e.secret("shared", testkit.OwnedBy(first, second))
	only := e.secret("only", testkit.OwnedBy(first))
	e.del(first, false)
	e.allGone(first, only)
	cur, err := e.get("Secret", ns, shared.Name)
	if err != nil {
		t.Fatalf("shared dependent: %v", err)
	}
	if cur.Deleting() {
		t.Fatal("shared dependent is being deleted although its second owner lives")
	}
	if len(cur.OwnerReferences) != 1 || cur.OwnerReferences[0].UID != second.UID {
		t.Fatalf("owner references = %+v, want only %s", cur.OwnerReferences, second.Name)
	}
}

func TestCollector_DiamondIsNoCycleAndIsDeleted(t *testing.T) {
	e := newEnv(t, false)
	e.startGC()
	top := e.secret("top")
	left := e.secret("left", testkit.OwnedBy(top))
	right := e.secret("right", testkit.OwnedBy(top))
	bottom := e.secret("bottom", testkit.OwnedBy(left, right))
	// A real cycle made after the diamond: once it is reported the collector
	// has seen the diamond too (one watch, in order).
	x := e.secret("x")
	y := e.secret("y", testkit.OwnedBy(x))
	e.setOwners(x, y)
	e.eventually("cycle x-y reported", func() string {
		cur, err := e.get("Secret", ns, "x")
		if err != nil || cur.Annotations[gc.AnnotationCycle] == "" {
			return "not reported"
		}
		return ""
	})
	for _, o := range []*api.Object{top, left, right, bottom} {
		cur, err := e.get("Secret", ns, o.Name)
		if err != nil {
			t.Fatal(err)
		}
		if r := cur.Annotations[gc.AnnotationCycle]; r != "" {
			t.Fatalf("diamond member %s reported on a cycle: %q", o.Name, r)
		}
	}
	e.del(top, false)
	e.allGone(top, left, right, bottom)
}

func TestCollector_CycleIsReportedAndStillDeleted(t *testing.T) {
	e := newEnv(t, false)
	e.startGC()
	a := e.secret("a")
	b := e.secret("b", testkit.OwnedBy(a))
	c := e.secret("c", testkit.OwnedBy(b))
	tail := e.secret("tail", testkit.OwnedBy(c)) // hangs off the cycle
	e.setOwners(a, c)
	const want = "Secret/a,Secret/b,Secret/c"
	for _, o := range []*api.Object{a, b, c} {
		e.eventually(o.Name+" reported", func() string {
			cur, err := e.get("Secret", ns, o.Name)
			if err != nil {
				return err.Error()
			}
			if got := cur.Annotations[gc.AnnotationCycle]; got != want {
				return fmt.Sprintf("annotated %q", got)
			}
			return ""
		})
	}
	cur, err := e.get("Secret", ns, tail.Name)
	if err != nil {
		t.Fatal(err)
	}
	if r := cur.Annotations[gc.AnnotationCycle]; r != "" {
		t.Fatalf("object off the cycle reported: %q", r)
	}
	e.del(b, false)
	e.allGone(a, b, c, tail)
}

func TestCollector_ControllerManagedDependentIsLeftToItsController(t *testing.T) {
	e := newEnv(t, false)
	e.startGC()
	owner := e.secret("owner", testkit.Finalizers(hold))
	managed := e.secret("managed", testkit.ControlledBy(owner))
	plain := e.secret("plain", testkit.OwnedBy(owner))
	e.del(owner, false)
	// The plain dependent going proves the collector handled the owner.
	e.allGone(plain)
	if s := e.state(managed); s != "live" {
		t.Fatalf("controller-managed dependent is %s while its owner holds %s", s, hold)
	}
	if s := e.state(owner); s != "deleting" {
		t.Fatalf("owner is %s, want deleting", s)
	}
	// The owner's controller finishes: the collector takes over.
	e.update(owner, func(o *api.Object) { o.RemoveFinalizer(hold) })
	e.allGone(managed, owner)
}

func TestCollector_OrphanOfForceDeletedOwnerIsCollected(t *testing.T) {
	e := newEnv(t, false)
	e.startGC()
	owner := e.secret("owner")
	orphan := e.secret("orphan", testkit.OwnedBy(owner))
	grandchild := e.secret("grandchild", testkit.OwnedBy(orphan))
	other := e.secret("other")
	kept := e.secret("kept", testkit.OwnedBy(owner, other))
	e.del(owner, true)
	e.allGone(owner, orphan, grandchild)
	if s := e.state(kept); s != "live" {
		t.Fatalf("dependent with a live second owner is %s", s)
	}
}

func TestCollector_NamespaceDeletionCascadesToEverythingInIt(t *testing.T) {
	e := newEnv(t, false)
	e.startGC()
	elsewhere := e.create(testkit.Secret(api.DefaultNamespace, "elsewhere", nil))
	root := e.secret("root")
	child := e.secret("child", testkit.OwnedBy(root))
	loose := e.secret("loose")
	x := e.secret("x")
	y := e.secret("y", testkit.OwnedBy(x))
	e.setOwners(x, y)
	held := e.secret("held", testkit.Finalizers(hold))
	managed := e.secret("managed", testkit.ControlledBy(held))
	nsObj, err := e.get(gc.NamespaceKind, "", ns)
	if err != nil {
		t.Fatal(err)
	}
	e.del(nsObj, false)
	e.waitState(held, "deleting")
	if s := e.state(managed); s != "live" {
		t.Fatalf("dependent managed by a finalizing controller is %s", s)
	}
	e.update(held, func(o *api.Object) { o.RemoveFinalizer(hold) })
	e.allGone(root, child, loose, x, y, held, managed, nsObj)
	list, err := e.c.List(context.Background(), "Secret", ns, api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Fatalf("%d objects left in the deleted namespace", len(list.Items))
	}
	if s := e.state(elsewhere); s != "live" {
		t.Fatalf("object in another namespace is %s", s)
	}
}

func TestCollector_RestartMidCascadeFinishes(t *testing.T) {
	e := newEnv(t, false)
	stop := e.startGC()
	chain := []*api.Object{e.secret("n0")}
	for i := 1; i <= 6; i++ {
		prev := chain[i-1]
		opts := []testkit.Opt{testkit.OwnedBy(prev)}
		switch i {
		case 3:
			opts = append(opts, testkit.Finalizers(hold)) // the cascade stops here while it is held
		case 4:
			opts = []testkit.Opt{testkit.ControlledBy(prev)}
		}
		chain = append(chain, e.secret(fmt.Sprintf("n%d", i), opts...))
	}
	e.del(chain[0], false)
	e.waitState(chain[3], "deleting")
	stop()
	// Between collectors: the upper half waits for n3, n4 is untouched.
	for i, o := range chain {
		want := "deleting"
		if i > 3 {
			want = "live"
		}
		if s := e.state(o); s != want {
			t.Fatalf("with the collector stopped, %s is %s, want %s", o.Name, s, want)
		}
	}
	e.update(chain[3], func(o *api.Object) { o.RemoveFinalizer(hold) })
	if s := e.state(chain[3]); s != "deleting" {
		t.Fatalf("n3 is %s without a collector; cascade-deletion should hold it", s)
	}
	e.startGC()
	e.allGone(chain...)
}

func TestCollector_ManyDependentsAreAllDeleted(t *testing.T) {
	e := newEnv(t, false)
	e.startGC()
	owner := e.secret("owner")
	var deps []*api.Object
	for i := range 200 {
		deps = append(deps, e.secret(fmt.Sprintf("dep-%03d", i), testkit.OwnedBy(owner)))
	}
	e.del(owner, false)
	e.allGone(append(deps, owner)...)
	if slices.ContainsFunc(deps, func(o *api.Object) bool { return e.state(o) != "gone" }) {
		t.Fatal("a dependent came back")
	}
}

func TestCollector_OrphansLeftWhileStoppedAreCollectedAtStart(t *testing.T) {
	e := newEnv(t, false)
	owner := e.secret("owner")
	orphan := e.secret("orphan", testkit.OwnedBy(owner))
	e.del(owner, true) // no collector running
	if s := e.state(orphan); s != "live" {
		t.Fatalf("orphan is %s before any collector ran", s)
	}
	reg := prometheus.NewRegistry()
	e.startGCWith(reg)
	e.allGone(orphan)
	e.eventually("orphan deletion counted", func() string {
		if v := counterValue(t, reg, "cairn_gc_actions_total", "action", "orphan"); v != 1 {
			return fmt.Sprintf("orphan deletions counted %v", v)
		}
		return ""
	})
}

// counterValue returns the value of the counter name{label=value} in reg,
// 0 when absent.
func counterValue(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	n, _ := testkit.MetricSum(t, reg, name, label, value)
	return n
}

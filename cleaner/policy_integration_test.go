package cleaner_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cleaner"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/event"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/server/servertest"
	"cairn.dev/cairn/trace"
)

// newEventEnv is newEnv with the event service: Events created without a
// project fan out to the Projects subscribed, as in a cairn server.
func newEventEnv(t testing.TB) *env {
	t.Helper()
	svc := event.New(event.Options{})
	traces := trace.NewStore(10, 1000)
	ts := servertest.Start(t, servertest.WithTraces(leading{traces}),
		servertest.WithKinds(kinds.All(kinds.Deps{EventActions: svc.Actions(), EventRemoveWrites: svc.RemoveWrites})...),
		servertest.WithAuthorize(svc.Authorize),
		servertest.WithRegistryOptions(func(o *registry.Options) { o.Authority = svc }))
	svc.Bind(ts.Registry, nil)
	ts.Auth.SetScopeCheck(svc.CheckToken)
	return &env{t: t, ts: ts, c: local.New(ts.Registry, identity.System()), traces: traces}
}

// subscribe creates a Project subscribed to the Cleaners' Events of the
// given types.
func (e *env) subscribe(name string, types ...string) {
	e.t.Helper()
	p := &api.Project{ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns}, Spec: api.ProjectSpec{
		WorkerTemplate:     api.WorkerSpec{Command: []string{"true"}},
		EventSubscriptions: []api.EventSubscription{{Source: cleaner.EventSource, Types: types}},
	}}
	if _, err := client.For[*api.Project](e.c).Create(context.Background(), p); err != nil {
		e.t.Fatalf("create project %s: %v", name, err)
	}
}

// announced returns "type kind/name by cleaner" of every Event a Cleaner
// created in the namespace, sorted.
func (e *env) announced() []string {
	e.t.Helper()
	evs, _, err := client.For[*api.Event](e.c).List(context.Background(), ns, api.ListOptions{})
	if err != nil {
		e.t.Fatalf("list events: %v", err)
	}
	var out []string
	for _, ev := range evs {
		if ev.Spec.Source != cleaner.EventSource {
			continue
		}
		l := ev.Spec.Labels
		out = append(out, fmt.Sprintf("%s %s/%s by %s for %s", ev.Spec.Type, l["kind"], l["name"], l["cleaner"], ev.Spec.Project))
	}
	slices.Sort(out)
	return out
}

func (e *env) waitAnnounced(want ...string) {
	e.t.Helper()
	slices.Sort(want)
	testkit.EventuallyNil(e.t, wait, "the Cleaner's Events", func() error {
		if got := e.announced(); !slices.Equal(got, want) {
			return fmt.Errorf("events %q, want %q", got, want)
		}
		return nil
	})
}

func TestCleaner_NeverDeletesATargetCarryingTheKeepAnnotation(t *testing.T) {
	e := newEnv(t)
	r := e.start(nil)
	e.secret("s", testkit.Labels("preview", "closed"), testkit.Annotations(api.AnnotationKeep, "true"))
	e.secret("t", testkit.Labels("preview", "closed"))
	e.createCleaner("c", api.CleanerSpec{
		Targets:    []api.CleanerTarget{secretTarget("s", "s", true), secretTarget("t", "t", true)},
		Conditions: []string{closed},
	})
	testkit.Eventually(t, wait, "the cleaner and its other target deleted", func() bool {
		return e.gone(api.KindCleaner, "c") && e.gone(api.KindSecret, "t")
	})
	if e.gone(api.KindSecret, "s") {
		t.Fatal("a target carrying cairn.dev/keep was deleted")
	}
	if st, ok := traceHas(t, r, "c", `Secret/s carries cairn.dev/keep: "true": never deleted`, "deleted Secret/t"); !ok {
		t.Errorf("trace %q does not say why Secret/s stays", st)
	}
}

func TestCleaner_DryRunRecordsWhatItWouldDeleteAnnouncesItOnceAndDeletesNothing(t *testing.T) {
	e := newEventEnv(t)
	r := e.start(nil)
	e.subscribe("chat", cleaner.EventTypeWouldDelete, cleaner.EventTypeDeleted)
	e.secret("s", testkit.Labels("preview", "closed"))
	e.createCleaner("c", api.CleanerSpec{DryRun: true, Targets: []api.CleanerTarget{secretTarget("s", "s", true)},
		Conditions: []string{closed}})
	c := e.waitPhase("c", api.CleanerPending)
	if ev := c.Status.LastEvaluation; ev == nil || !slices.Equal(ev.WouldDelete, []string{"Secret/s"}) {
		t.Fatalf("lastEvaluation %+v, want wouldDelete [Secret/s]", ev)
	}
	if e.gone(api.KindSecret, "s") || e.gone(api.KindCleaner, "c") {
		t.Fatal("a dry run deleted")
	}
	e.waitAnnounced("would-delete Secret/s by c for chat")
	if st, ok := traceHas(t, r, "c", "dry run: would delete Secret/s; nothing deleted"); !ok {
		t.Errorf("trace %q does not say it is a dry run", st)
	}
	// Evaluated again (a change of the target), it announces nothing new.
	e.label(api.KindSecret, "s", "again", "1")
	testkit.EventuallyNil(t, wait, "a second evaluation", func() error {
		got, err := e.getCleaner("c")
		if err != nil {
			return err
		}
		if !got.Status.LastEvaluation.Time.After(c.Status.LastEvaluation.Time) {
			return fmt.Errorf("last evaluated at %s", got.Status.LastEvaluation.Time)
		}
		return nil
	})
	if got := e.announced(); len(got) != 1 {
		t.Fatalf("events after a second evaluation: %q, want the first only", got)
	}
}

func TestCleaner_CapacityDeletesTheOldestBeyondMaxAndAnnouncesEachDeletion(t *testing.T) {
	e := newEventEnv(t)
	r := e.start(nil)
	e.subscribe("chat", cleaner.EventTypeDeleted)
	preview := testkit.Labels("app", "preview")
	for _, name := range []string{"p1", "p2", "p3"} {
		e.secret(name, preview)
	}
	e.secret("other") // not selected
	e.createCleaner("at-most-2", api.CleanerSpec{Capacity: &api.CleanerCapacity{Max: 2,
		Selector: api.CapacitySelector{Kind: api.KindSecret, MatchLabels: map[string]string{"app": "preview"}}}})
	testkit.Eventually(t, wait, "the oldest preview deleted", func() bool { return e.gone(api.KindSecret, "p1") })
	e.waitAnnounced("deleted Secret/p1 by at-most-2 for chat")
	// A fourth one makes the (now) oldest go: the Cleaner stays, a
	// standing rule woken by the objects it selects.
	e.secret("p4", preview)
	testkit.Eventually(t, wait, "the next oldest deleted", func() bool { return e.gone(api.KindSecret, "p2") })
	for _, name := range []string{"p3", "p4", "other"} {
		if e.gone(api.KindSecret, name) {
			t.Errorf("%s deleted", name)
		}
	}
	if e.gone(api.KindCleaner, "at-most-2") {
		t.Fatal("a standing capacity rule deleted itself")
	}
	e.waitAnnounced("deleted Secret/p1 by at-most-2 for chat", "deleted Secret/p2 by at-most-2 for chat")
	if st, ok := traceHas(t, r, "at-most-2", "Secret/p2 is beyond the capacity", "a standing capacity rule"); !ok {
		t.Errorf("trace %q does not explain the capacity", st)
	}
}

func TestCleaner_LastChangeTimeOfATargetIsItsLastWrite(t *testing.T) {
	e := newEnv(t)
	e.start(nil)
	s := e.secret("s")
	e.createCleaner("c", api.CleanerSpec{Targets: []api.CleanerTarget{secretTarget("s", "s", true)},
		Conditions: []string{`s.lastChangeTime > timestamp(s.metadata.creationTimestamp) + duration("2s")`}})
	e.waitPhase("c", api.CleanerPending)
	if e.gone(api.KindSecret, "s") {
		t.Fatal("deleted before any change")
	}
	later := s.CreationTimestamp.Add(3 * time.Second)
	testkit.Eventually(t, wait, "time passing", func() bool { return time.Now().After(later) })
	e.label(api.KindSecret, "s", "pushed", "1")
	testkit.Eventually(t, wait, "the change seen in lastChangeTime", func() bool {
		return e.gone(api.KindSecret, "s") && e.gone(api.KindCleaner, "c")
	})
}

func TestCleaner_FailedEvaluationIsRetriedWithinSecondsNotAfterThePeriod(t *testing.T) {
	e := newEnv(t)
	r := e.start(nil)
	e.secret("s", testkit.Labels("preview", "open"))
	e.createCleaner("c", api.CleanerSpec{Targets: []api.CleanerTarget{secretTarget("s", "s", true)},
		Conditions: []string{`s.metadata.labels["closed"] == "yes"`}})
	c := e.waitPhase("c", api.CleanerFailed)
	next := c.Status.NextScheduledEvaluation
	if next == nil || next.Sub(c.Status.LastEvaluation.Time) > cleaner.FailureBackoffBase+time.Second {
		t.Fatalf("next evaluation %v after a failure at %s: want a backoff of seconds", next, c.Status.LastEvaluation.Time)
	}
	if !strings.Contains(c.Status.LastError.Message, "no such key") {
		t.Errorf("lastError %q does not say what failed", c.Status.LastError.Message)
	}
	testkit.EventuallyNil(t, wait, "a second failure in a row", func() error {
		got, err := e.getCleaner("c")
		if err != nil {
			return err
		}
		if got.Status.ConsecutiveFailures < 2 {
			return fmt.Errorf("consecutiveFailures %d", got.Status.ConsecutiveFailures)
		}
		return nil
	})
	if st, ok := traceHas(t, r, "c", "(backoff after a failed evaluation)"); !ok {
		t.Errorf("trace %q does not name the backoff", st)
	}
}

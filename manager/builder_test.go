package manager_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/server/servertest"
)

// seen is a reconciler that records the keys it was given.
type seen struct {
	mu   sync.Mutex
	keys map[string]int
}

func (s *seen) Reconcile(_ context.Context, key string) (controller.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[key]++
	return controller.Result{}, nil
}

func (s *seen) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[key] > 0
}

// runTerm runs a manager whose only controller is set up by setup.
func runTerm(t *testing.T, srv *servertest.Server, setup func(t *manager.Term) error) {
	t.Helper()
	m, err := manager.New(manager.Options{Client: srv.Client(t), Logger: quiet(),
		Controllers: []manager.Controller{{Name: "probe", Setup: setup}}})
	if err != nil {
		t.Fatal(err)
	}
	startManager(t, m)
}

func TestBuilder_ForOwnsWatches_EnqueueTheirKeys(t *testing.T) {
	srv := servertest.Start(t)
	c := srv.Client(t)
	ctx := testkit.Context(t)
	owner, err := c.Create(ctx, testkit.Object(api.KindDataObject, "default", "owner", testkit.Field("data", `{"a":1}`)))
	if err != nil {
		t.Fatal(err)
	}
	r := &seen{keys: map[string]int{}}
	runTerm(t, srv, func(tm *manager.Term) error {
		return manager.NewBuilder(tm, "probe").
			For(api.KindDataObject).
			Owns(api.KindSecret).
			Watches(api.KindSecret, func(o *api.Object) []string {
				if v := o.Labels["for"]; v != "" {
					return []string{"default/" + v}
				}
				return nil
			}).
			Complete(r)
	})
	testkit.Eventually(t, 10*time.Second, "the For kind enqueues its own key", func() bool { return r.has("default/owner") })
	if _, err := c.Create(ctx, testkit.Secret("default", "owned", nil, testkit.ControlledBy(owner))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, testkit.Secret("default", "pointer", nil, testkit.Labels("for", "watched"))); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "Watches enqueues what its key function says", func() bool { return r.has("default/watched") })
	if r.has("default/owned") || r.has("default/pointer") {
		t.Fatalf("an owned or watched object was reconciled under its own key: %v", r.keys)
	}
	r.mu.Lock()
	n := r.keys["default/owner"]
	r.mu.Unlock()
	if n < 1 {
		t.Fatal("the owner was not reconciled")
	}
}

func TestBuilder_OwnedChangeEnqueuesItsControllingOwner(t *testing.T) {
	srv := servertest.Start(t)
	c := srv.Client(t)
	ctx := testkit.Context(t)
	owner, err := c.Create(ctx, testkit.Object(api.KindDataObject, "default", "parent", testkit.Field("data", `{"a":1}`)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, testkit.Secret("default", "child", nil, testkit.ControlledBy(owner))); err != nil {
		t.Fatal(err)
	}
	// Only the Secret is watched: the DataObject's key comes from Owns.
	r := &seen{keys: map[string]int{}}
	runTerm(t, srv, func(tm *manager.Term) error {
		b := manager.NewBuilder(tm, "probe").For(api.KindDataObject).Owns(api.KindSecret)
		return b.Complete(r)
	})
	testkit.Eventually(t, 10*time.Second, "the owned Secret enqueues its owner", func() bool { return r.has("default/parent") })
	if r.has("default/child") {
		t.Fatal("the owned Secret was reconciled under its own key")
	}
}

func TestBuilder_IndexAddedBeforeIsKept_HooksRunAfterSyncBeforeWorkers(t *testing.T) {
	srv := servertest.Start(t)
	c := srv.Client(t)
	ctx := testkit.Context(t)
	if _, err := c.Create(ctx, testkit.Secret("default", "s", nil, testkit.Labels("app", "web"))); err != nil {
		t.Fatal(err)
	}
	byApp := func(o *api.Object) []string { return []string{o.Labels["app"]} }
	type event struct{ what, detail string }
	var mu sync.Mutex
	var events []event
	note := func(what, detail string) {
		mu.Lock()
		events = append(events, event{what, detail})
		mu.Unlock()
	}
	runTerm(t, srv, func(tm *manager.Term) error {
		// Another controller of the process added the index first.
		if err := tm.Informers.For(api.KindSecret).AddIndex("app", byApp); err != nil {
			return err
		}
		secrets := tm.Informers.For(api.KindSecret)
		return manager.NewBuilder(tm, "probe").
			For(api.KindSecret).
			Index(api.KindSecret, "app", byApp).
			Starting(func(context.Context, *controller.Controller) error {
				keys, err := secrets.IndexKeys("app", "web")
				note("starting", strings.Join(keys, ","))
				return err
			}).
			Complete(controller.ReconcilerFunc(func(_ context.Context, key string) (controller.Result, error) {
				note("reconcile", key)
				return controller.Result{}, nil
			}))
	})
	testkit.Eventually(t, 10*time.Second, "the secret is reconciled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	if events[0] != (event{"starting", "default/s"}) {
		t.Fatalf("first event %v, want the hook, on synced caches, before any reconcile", events[0])
	}
}

func TestBuilder_MistakesAreErrorsNamingTheController(t *testing.T) {
	srv := servertest.Start(t)
	errc := make(chan error, 4)
	runTerm(t, srv, func(tm *manager.Term) error {
		r := controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) { return controller.Result{}, nil })
		errc <- manager.NewBuilder(tm, "no-for").Owns(api.KindSecret).Complete(r)
		errc <- manager.NewBuilder(tm, "twice").For(api.KindSecret).For(api.KindTarget).Complete(r)
		errc <- manager.NewBuilder(tm, "nil").For(api.KindSecret).Complete(nil)
		inf := tm.Informers.For(api.KindSecret)
		errc <- manager.EnsureIndex(inf, informer.NamespaceIndex, informer.IndexNamespace)
		return nil
	})
	for _, want := range []string{"no-for: Owns(Secret) needs For first", "twice: For(Target) after For(Secret)", "nil: no reconciler"} {
		if err := <-errc; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one saying %q", err, want)
		}
	}
	if err := <-errc; err != nil {
		t.Errorf("EnsureIndex on a new index: %v", err)
	}
}

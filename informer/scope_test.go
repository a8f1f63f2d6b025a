package informer_test

import (
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/internal/testkit"
)

func TestFactory_ScopeSharesInformersAndItsShutdownRemovesOnlyItsHandlers(t *testing.T) {
	srv := startWithWidgets(t)
	c := httpClient(t, srv)
	mustCreate(t, c, testkit.Secret("default", "before", nil))
	f := informer.NewFactory(c, informer.Options{})
	process := newRecorder(t)
	f.For(api.KindSecret).AddEventHandler(process.handler())
	startFactory(t, f)
	waitSynced(t, f)

	// A term's view: the same cache; its handler gets the cache replayed.
	term := f.Scope()
	inf := term.For(api.KindSecret)
	if inf.Len() != 1 || !inf.HasSynced() {
		t.Fatalf("the view's informer holds %d objects (synced %v), want the shared cache of 1", inf.Len(), inf.HasSynced())
	}
	first := newRecorder(t)
	inf.AddEventHandler(first.handler())
	first.waitFor(t, "the replay of the cache", func() bool { return first.adds["default/before"] == 1 })

	mustCreate(t, c, testkit.Secret("default", "during", nil))
	first.waitFor(t, "the view's handler to see a create", func() bool { return first.adds["default/during"] == 1 })

	// The term ends: its handler is gone, the informer and the process's
	// handler go on; a handler registered through the closed view never runs.
	term.Shutdown()
	late := newRecorder(t)
	term.For(api.KindSecret).AddEventHandler(late.handler())
	mustCreate(t, c, testkit.Secret("default", "after", nil))
	process.waitFor(t, "the process's handler to see the create after the term", func() bool { return process.adds["default/after"] == 1 })
	first.mu.Lock()
	n := first.adds["default/after"]
	first.mu.Unlock()
	late.mu.Lock()
	m := len(late.log)
	late.mu.Unlock()
	if n != 0 || m != 0 {
		t.Fatalf("after the view's Shutdown its handlers saw %d and %d events, want none", n, m)
	}

	// The next term's view finds the informer current at once.
	next := f.Scope()
	second := newRecorder(t)
	next.For(api.KindSecret).AddEventHandler(second.handler())
	second.waitFor(t, "the next view's replay", func() bool { return len(second.adds) == 3 })
	next.Shutdown()
}

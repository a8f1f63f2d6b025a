package informer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

// httpClient is an HTTP client of srv with the admin token.
func httpClient(t *testing.T, srv *servertest.Server) client.Interface {
	t.Helper()
	c, err := client.NewHTTP(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startFactory starts f until the test ends and shuts it down at cleanup.
func startFactory(t *testing.T, f *informer.Factory) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	f.Start(ctx)
}

func waitSynced(t *testing.T, f *informer.Factory) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if !f.WaitForSync(ctx) {
		t.Fatal("the factory's informers did not sync")
	}
}

func TestFactory_SharesOneInformerPerKindAndEveryControllerSeesItsEvents(t *testing.T) {
	srv := startWithWidgets(t)
	c := httpClient(t, srv)
	mustCreate(t, c, testkit.Object(api.KindNamespace, "", "other"))
	mustCreate(t, c, testkit.Secret("default", "before", nil))
	f := informer.NewFactory(c, informer.Options{})

	// Two controllers, in goroutines of their own, ask for Secrets.
	var (
		wg   sync.WaitGroup
		got  [2]*informer.Informer
		recs = [2]*recorder{newRecorder(t), newRecorder(t)}
	)
	for n := range 2 {
		wg.Go(func() {
			got[n] = f.For(api.KindSecret)
			got[n].AddEventHandler(recs[n].handler())
		})
	}
	wg.Wait()
	if got[0] != got[1] {
		t.Fatal("two controllers asking for Secrets got two informers")
	}
	widgets := f.For(testkit.KindWidget)
	if widgets == got[0] || widgets.Kind() != testkit.KindWidget || got[0].Kind() != api.KindSecret {
		t.Fatalf("For(Widget) = an informer of %s, For(Secret) = one of %s", widgets.Kind(), got[0].Kind())
	}
	startFactory(t, f)
	waitSynced(t, f)
	if !got[0].HasSynced() || !widgets.HasSynced() {
		t.Error("WaitForSync returned before every informer synced")
	}

	mustCreate(t, c, testkit.Secret("other", "after", nil)) // every namespace is watched
	mustCreate(t, c, testkit.Widget("default", "w"))
	for n, rec := range recs {
		rec.waitFor(t, "the secrets", func() bool { return rec.adds["default/before"] == 1 && rec.adds["other/after"] == 1 })
		rec.mu.Lock()
		if len(rec.adds) != 2 {
			t.Errorf("controller %d saw additions %v, want the two secrets only", n, rec.adds)
		}
		rec.mu.Unlock()
	}
	testkit.Eventually(t, waitTimeout, "the widget in the widget informer", func() bool {
		_, ok := widgets.Get("default", "w")
		return ok
	})
	if f.For(api.KindSecret) != got[0] || f.For(testkit.KindWidget) != widgets {
		t.Error("For returned a new informer after Start")
	}
}

func TestFactory_StartsAnInformerCreatedAfterStart(t *testing.T) {
	srv := startWithWidgets(t)
	c := httpClient(t, srv)
	mustCreate(t, c, testkit.Widget("default", "w1"))
	f := informer.NewFactory(c, informer.Options{})
	f.For(api.KindSecret)
	startFactory(t, f)
	waitSynced(t, f)

	late := f.For(testkit.KindWidget)
	rec := newRecorder(t)
	late.AddEventHandler(rec.handler())
	waitSynced(t, f) // now includes the late informer
	if _, ok := late.Get("default", "w1"); !ok {
		t.Error("the late informer synced without the existing widget")
	}
	mustCreate(t, c, testkit.Widget("default", "w2"))
	rec.waitFor(t, "both widgets", func() bool { return rec.adds["default/w1"] == 1 && rec.adds["default/w2"] == 1 })
}

func TestFactory_ShutdownStopsEveryInformerAndItsWatch(t *testing.T) {
	srv := startWithWidgets(t)
	c := httpClient(t, srv)
	f := informer.NewFactory(c, informer.Options{})
	f.For(api.KindSecret)
	f.For(testkit.KindWidget)
	f.Start(context.Background())
	waitSynced(t, f)
	testkit.Eventually(t, waitTimeout, "a watch per kind", func() bool { return srv.API.OpenWatches() == 2 })

	f.Shutdown() // returns once every informer goroutine has returned
	testkit.Eventually(t, waitTimeout, "the watches to close", func() bool { return srv.API.OpenWatches() == 0 })
	f.Shutdown() // idempotent

	// After Shutdown a new informer never runs, and waiting for it fails
	// at once instead of blocking.
	late := f.For(api.KindNamespace)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if f.WaitForSync(ctx) {
		t.Error("WaitForSync after Shutdown reported an informer that never ran as synced")
	}
	if ctx.Err() != nil {
		t.Error("WaitForSync after Shutdown waited for its ctx")
	}
	if late.HasSynced() {
		t.Error("an informer created after Shutdown ran")
	}
}

func TestFactory_EndOfStartContextStopsEveryInformer(t *testing.T) {
	srv := startWithWidgets(t)
	c := httpClient(t, srv)
	f := informer.NewFactory(c, informer.Options{})
	f.For(api.KindSecret)
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx)
	waitSynced(t, f)
	testkit.Eventually(t, waitTimeout, "the watch", func() bool { return srv.API.OpenWatches() == 1 })

	cancel()
	testkit.Eventually(t, waitTimeout, "the watch to close", func() bool { return srv.API.OpenWatches() == 0 })
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Shutdown()
	}()
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("Shutdown after the end of Start's ctx did not return")
	}
}

func TestFactory_WaitForSyncBeforeStartWaitsForStartOrItsContext(t *testing.T) {
	srv := startWithWidgets(t)
	f := informer.NewFactory(httpClient(t, srv), informer.Options{})
	inf := f.For(api.KindSecret)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if f.WaitForSync(cancelled) {
		t.Error("WaitForSync reported synced before Start")
	}

	synced := make(chan bool, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		synced <- f.WaitForSync(ctx)
	}()
	startFactory(t, f)
	if !<-synced || !inf.HasSynced() {
		t.Error("WaitForSync called before Start did not report the sync that followed Start")
	}
}

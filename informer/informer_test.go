package informer_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

// waitTimeout bounds every wait for the informer to catch up.
const waitTimeout = 20 * time.Second

// partition is a network between the client and the server that the test
// can cut: while down, new connections fail as if the server were
// unreachable. With keep-alives off, every request dials, so nothing gets
// through.
type partition struct{ down atomic.Bool }

func (p *partition) client(t *testing.T, srv *servertest.Server) client.Interface {
	t.Helper()
	var d net.Dialer
	tr := srv.Transport()
	tr.DisableKeepAlives = true
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if p.down.Load() {
			return nil, errors.New("network partitioned by the test")
		}
		return d.DialContext(ctx, network, addr)
	}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := client.NewHTTP(client.Config{Server: srv.URL, Token: srv.Token, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cut partitions the network and closes the open watches.
func (p *partition) cut(srv *servertest.Server) {
	p.down.Store(true)
	srv.CloseWatches()
}

func (p *partition) heal() { p.down.Store(false) }

// recorder counts what a handler receives, per object key.
type recorder struct {
	mu      sync.Mutex
	adds    map[string]int
	updates map[string]int
	resyncs map[string]int
	deletes map[string]int
	log     []string
}

// newRecorder returns an empty recorder whose events are logged if the
// test fails.
func newRecorder(t *testing.T) *recorder {
	r := &recorder{adds: map[string]int{}, updates: map[string]int{}, resyncs: map[string]int{}, deletes: map[string]int{}}
	t.Cleanup(func() {
		if t.Failed() {
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Logf("events seen: %s", strings.Join(r.log, ", "))
		}
	})
	return r
}

func key(o *api.Object) string { return api.Key(o.Namespace, o.Name) }

func (r *recorder) handler() informer.Handler {
	return informer.Handler{
		OnAdd: func(o *api.Object) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.adds[key(o)]++
			r.log = append(r.log, "add "+key(o))
		},
		OnUpdate: func(old, new *api.Object) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if old == new {
				r.resyncs[key(new)]++
				return
			}
			r.updates[key(new)]++
			r.log = append(r.log, "update "+key(new))
		},
		OnDelete: func(o *api.Object) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.deletes[key(o)]++
			r.log = append(r.log, "delete "+key(o))
		},
	}
}

// waitFor waits until cond, called under the recorder's lock, holds.
func (r *recorder) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, waitTimeout, what, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return cond()
	})
}

func run(t *testing.T, inf *informer.Informer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	sctx, scancel := context.WithTimeout(context.Background(), waitTimeout)
	defer scancel()
	if !inf.WaitForSync(sctx) {
		t.Fatal("informer did not sync")
	}
}

func create(t *testing.T, c client.Interface, objs ...*api.Object) {
	t.Helper()
	for _, o := range objs {
		if _, err := c.Create(testkit.Context(t), o); err != nil {
			t.Fatalf("create %s: %v", o.Name, err)
		}
	}
}

func label(t *testing.T, c client.Interface, name, k, v string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, k, v)
	if _, err := c.Patch(testkit.Context(t), api.KindSecret, "default", name, []byte(patch), false); err != nil {
		t.Fatalf("patch %s: %v", name, err)
	}
}

func forceDelete(t *testing.T, c client.Interface, name string) {
	t.Helper()
	if _, _, err := c.Delete(testkit.Context(t), api.KindSecret, "default", name, api.DeleteOptions{Force: true}); err != nil {
		t.Fatalf("delete %s: %v", name, err)
	}
}

func names(objs []*api.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Name)
	}
	sort.Strings(out)
	return out
}

func TestInformer_SyncsAndDeliversChanges(t *testing.T) {
	srv := servertest.Start(t)
	for name, c := range map[string]client.Interface{"http": srv.Client(t), "local": local.New(srv.Registry, identity.System())} {
		t.Run(name, func(t *testing.T) {
			prefix := name + "-"
			create(t, c, testkit.Secret("default", prefix+"a", nil, testkit.Labels("set", name)),
				testkit.Secret("default", prefix+"b", nil, testkit.Labels("set", name)))
			rec := newRecorder(t)
			// A small page size makes the first list take several pages.
			inf := informer.New(c, api.KindSecret, "default", informer.Options{LabelSelector: "set=" + name, PageSize: 1})
			inf.AddEventHandler(rec.handler())
			run(t, inf)

			rec.mu.Lock()
			if rec.adds["default/"+prefix+"a"] != 1 || rec.adds["default/"+prefix+"b"] != 1 || len(rec.adds) != 2 {
				t.Errorf("adds after sync = %v, want a and b once", rec.adds)
			}
			rec.mu.Unlock()
			if got := names(inf.List()); strings.Join(got, ",") != prefix+"a,"+prefix+"b" {
				t.Errorf("List = %v", got)
			}
			if o, ok := inf.Get("default", prefix+"a"); !ok || o.Name != prefix+"a" {
				t.Errorf("Get(a) = %v, %v", o, ok)
			}
			if inf.ResourceVersion() == "" {
				t.Error("ResourceVersion empty after sync")
			}

			create(t, c, testkit.Secret("default", prefix+"c", nil, testkit.Labels("set", name)))
			label(t, c, prefix+"a", "x", "1")
			forceDelete(t, c, prefix+"b")
			label(t, c, prefix+"c", "set", "other") // leaves the selection
			// The initial list comes first, in key order.
			want := []string{"add default/" + prefix + "a", "add default/" + prefix + "b",
				"add default/" + prefix + "c", "update default/" + prefix + "a",
				"delete default/" + prefix + "b", "delete default/" + prefix + "c"}
			rec.waitFor(t, "the changes", func() bool { return len(rec.log) >= len(want) })
			rec.mu.Lock()
			got := strings.Join(rec.log, ", ")
			rec.mu.Unlock()
			if got != strings.Join(want, ", ") {
				t.Errorf("events:\n got %s\nwant %s", got, strings.Join(want, ", "))
			}
			if o, ok := inf.Get("default", prefix+"a"); !ok || o.Labels["x"] != "1" {
				t.Errorf("cache not updated: %v", o)
			}
			if _, ok := inf.Get("default", prefix+"b"); ok {
				t.Error("deleted object still cached")
			}

			// A handler added late first gets the cached objects.
			late := newRecorder(t)
			inf.AddEventHandler(late.handler())
			late.mu.Lock()
			if len(late.adds) != 1 || late.adds["default/"+prefix+"a"] != 1 {
				t.Errorf("late handler adds = %v, want only a", late.adds)
			}
			late.mu.Unlock()
		})
	}
}

func TestInformer_ResumesAfterCutWatchWithoutLosingOrDuplicatingEvents(t *testing.T) {
	srv := servertest.Start(t)
	var net partition
	c := net.client(t, srv)
	lc := local.New(srv.Registry, identity.System())
	const objects = 5
	var all []*api.Object
	for i := range objects {
		all = append(all, testkit.Secret("default", fmt.Sprintf("s%d", i), nil))
	}
	create(t, lc, all[:2]...)

	rec := newRecorder(t)
	inf := informer.New(c, api.KindSecret, "default", informer.Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	inf.AddEventHandler(rec.handler())
	run(t, inf)

	wantUpdates := map[string]int{}
	for round := range 3 {
		waitWatching(t, srv)
		net.cut(srv)
		// Written while the informer is disconnected: two updates of each
		// existing object (a relist would merge them into one), one new
		// object.
		for _, o := range all[:2+round] {
			label(t, lc, o.Name, "round", fmt.Sprint(round))
			label(t, lc, o.Name, "again", fmt.Sprint(round))
			wantUpdates[key(o)] += 2
		}
		create(t, lc, all[2+round])
		net.heal()
	}
	// A marker written after everything else: the informer delivers in
	// revision order, and after a reconnect it replays only what is newer
	// than the last version it saw, so once the marker has arrived every
	// earlier change, and any duplicate of one, has been delivered too.
	create(t, lc, testkit.Secret("default", "marker", nil))
	rec.waitFor(t, "the marker written after every change", func() bool { return rec.adds["default/marker"] == 1 })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.adds) != objects+1 {
		t.Errorf("added %d distinct objects, want %d and the marker", len(rec.adds), objects)
	}
	for _, o := range all {
		k := key(o)
		if rec.adds[k] != 1 {
			t.Errorf("%s added %d times, want 1", k, rec.adds[k])
		}
		if rec.updates[k] != wantUpdates[k] {
			t.Errorf("%s updated %d times, want %d", k, rec.updates[k], wantUpdates[k])
		}
		if rec.deletes[k] != 0 {
			t.Errorf("%s deleted %d times, want 0", k, rec.deletes[k])
		}
	}
}

// waitWatching waits until the server has an open watch.
func waitWatching(t *testing.T, srv *servertest.Server) {
	t.Helper()
	testkit.Eventually(t, waitTimeout, "the informer to open a watch", func() bool { return srv.API.OpenWatches() > 0 })
}

func TestInformer_RelistsAfterGoneAndReconcilesTheCache(t *testing.T) {
	srv := servertest.Start(t)
	var net partition
	c := net.client(t, srv)
	lc := local.New(srv.Registry, identity.System())
	create(t, lc, testkit.Secret("default", "keep", nil), testkit.Secret("default", "vanish", nil),
		testkit.Secret("default", "change", nil), testkit.Secret("default", "reborn", nil))

	rec := newRecorder(t)
	inf := informer.New(c, api.KindSecret, "default", informer.Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	inf.AddEventHandler(rec.handler())
	run(t, inf)
	oldReborn, _ := inf.Get("default", "reborn")
	waitWatching(t, srv)

	net.cut(srv)
	forceDelete(t, lc, "vanish")
	label(t, lc, "change", "v", "2")
	forceDelete(t, lc, "reborn")
	create(t, lc, testkit.Secret("default", "reborn", nil), testkit.Secret("default", "new", nil))
	ctx := testkit.Context(t)
	rev, err := srv.Store.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Store.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	net.heal()

	rec.waitFor(t, "the relist", func() bool { return rec.adds["default/new"] == 1 })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	want := map[string][4]int{ // adds, updates, deletes after the initial list
		"default/keep":   {1, 0, 0},
		"default/vanish": {1, 0, 1},
		"default/change": {1, 1, 0},
		"default/reborn": {2, 0, 1}, // a new uid: the old one is deleted, the new one added
		"default/new":    {1, 0, 0},
	}
	for k, w := range want {
		got := [4]int{rec.adds[k], rec.updates[k], rec.deletes[k]}
		if got != w {
			t.Errorf("%s: adds/updates/deletes = %v, want %v", k, got[:3], w[:3])
		}
	}
	if got := names(inf.List()); strings.Join(got, ",") != "change,keep,new,reborn" {
		t.Errorf("cache after relist = %v", got)
	}
	if o, _ := inf.Get("default", "reborn"); o.UID == oldReborn.UID {
		t.Error("cache kept the old incarnation of reborn")
	}
}

func TestInformer_ResyncRedeliversEveryObject(t *testing.T) {
	srv := servertest.Start(t)
	c := local.New(srv.Registry, identity.System())
	create(t, c, testkit.Secret("default", "r1", nil), testkit.Secret("default", "r2", nil))
	rec := newRecorder(t)
	inf := informer.New(c, api.KindSecret, "default", informer.Options{ResyncPeriod: 50 * time.Millisecond})
	inf.AddEventHandler(rec.handler())
	run(t, inf)
	rec.waitFor(t, "two resyncs", func() bool { return rec.resyncs["default/r1"] >= 2 && rec.resyncs["default/r2"] >= 2 })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.updates) != 0 {
		t.Errorf("resync delivered changes %v, want only old == new", rec.updates)
	}
}

func TestInformer_WaitForSyncReturnsFalseWhenCancelled(t *testing.T) {
	srv := servertest.Start(t)
	c := local.New(srv.Registry, identity.System())
	inf := informer.New(c, api.KindSecret, "default", informer.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if inf.WaitForSync(ctx) || inf.HasSynced() {
		t.Error("an informer that never ran reports synced")
	}
}

// listLimits records the limit of every List its client is asked for.
type listLimits struct {
	client.Interface
	mu     sync.Mutex
	limits []int64
}

func (c *listLimits) List(ctx context.Context, kind, ns string, opts api.ListOptions) (*api.List, error) {
	c.mu.Lock()
	c.limits = append(c.limits, opts.Limit)
	c.mu.Unlock()
	return c.Interface.List(ctx, kind, ns, opts)
}

func TestInformer_PagesOfAListGrow(t *testing.T) {
	srv := servertest.Start(t)
	c := &listLimits{Interface: local.New(srv.Registry, identity.System())}
	const n = 100
	var want []string
	for i := range n {
		name := fmt.Sprintf("p-%03d", i)
		want = append(want, name)
		create(t, c, testkit.Secret("default", name, nil))
	}
	// Pages of 2, 4, 8, ..., up to 16 × 2 = 32: 2+4+8+16+32+32+32 covers
	// 100 in 7 lists, where pages of 2 would take 50.
	inf := informer.New(c, api.KindSecret, "default", informer.Options{PageSize: 2})
	run(t, inf)
	if got := names(inf.List()); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("the informer holds %d objects, want the %d created", len(got), n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if wantLimits := []int64{2, 4, 8, 16, 32, 32, 32}; fmt.Sprint(c.limits) != fmt.Sprint(wantLimits) {
		t.Fatalf("the first list asked for pages of %v, want %v", c.limits, wantLimits)
	}
}

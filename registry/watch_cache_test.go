package registry_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/storetest"
)

// newCachedRegistry starts a registry whose watch caches keep capacity
// events (the default when 0) and send bookmarks every bookmarks.
func newCachedRegistry(t *testing.T, capacity int, bookmarks time.Duration) (*registry.Registry, *store.Store) {
	t.Helper()
	return newBoundedRegistry(t, capacity, 0, bookmarks)
}

// newBoundedRegistry starts a registry whose watch caches keep at most
// capacity events and about maxBytes bytes (the defaults when 0) and send
// bookmarks every bookmarks.
func newBoundedRegistry(t *testing.T, capacity int, maxBytes int64, bookmarks time.Duration) (*registry.Registry, *store.Store) {
	t.Helper()
	s, _ := storetest.Start(t)
	enc, err := registry.LoadOrCreateKey(filepath.Join(t.TempDir(), "key"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := registry.New(s, registry.Options{Kinds: kinds.All(kinds.Deps{}), Encryption: enc, BookmarkInterval: bookmarks})
	if err != nil {
		t.Fatal(err)
	}
	if capacity > 0 || maxBytes > 0 {
		registry.SetWatchCacheLimits(r, capacity, maxBytes)
	}
	if err := r.Init(sysCtx()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close) // runs before the store stops
	return r, s
}

func nsSecret(ns, name string, labels map[string]string) *api.Object {
	return testkit.Secret(ns, name, map[string]string{"k": "v"}, testkit.LabelMap(labels))
}

func rvOf(t testing.TB, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}

// nextChange returns the next event that is not a BOOKMARK; it fails the
// test when the stream ends or nothing arrives within 20s.
func nextChange(t testing.TB, w api.Watcher) api.ObjectEvent {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("watch ended: %v", w.Err())
			}
			if ev.Type != api.Bookmark {
				return ev
			}
		case <-timeout:
			t.Fatal("no change within 20s")
		}
	}
}

// expectChanges reads len(want) changes, each "TYPE namespace/name".
func expectChanges(t testing.TB, w api.Watcher, want ...string) []api.ObjectEvent {
	t.Helper()
	var out []api.ObjectEvent
	for _, wnt := range want {
		ev := nextChange(t, w)
		if got := ev.Type + " " + api.Key(ev.Object.Namespace, ev.Object.Name); got != wnt {
			t.Fatalf("event %q, want %q", got, wnt)
		}
		out = append(out, ev)
	}
	return out
}

func mustCreate(t testing.TB, r *registry.Registry, o *api.Object) *api.Object {
	t.Helper()
	out, err := r.Create(sysCtx(), o)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustWatch(t testing.TB, r *registry.Registry, ns, rv, selector string) api.Watcher {
	t.Helper()
	w, err := r.Watch(sysCtx(), "Secret", ns, api.ListOptions{ResourceVersion: rv, LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

func currentRV(t testing.TB, s *store.Store) string {
	t.Helper()
	rev, err := s.Revision(sysCtx())
	if err != nil {
		t.Fatal(err)
	}
	return strconv.FormatInt(rev, 10)
}

func TestWatchCache_ManyWatchersSeeEveryChangeOnceInOrderUnderConcurrentWriters(t *testing.T) {
	r, s := newCachedRegistry(t, 0, 50*time.Millisecond)
	ctx := sysCtx()
	from := currentRV(t, s)
	const watchers, writers, perWriter = 40, 8, 30
	// The reference: the store's own account of every change after from.
	ref := s.Watch(ctx, registry.KeyPrefix+"secrets/", rvOf(t, from)+1)
	defer ref.Close()

	ws := make([]api.Watcher, watchers)
	for i := range ws {
		ns := "" // every namespace, or the one namespace written to
		if i%2 == 1 {
			ns = "default"
		}
		ws[i] = mustWatch(t, r, ns, from, "")
		if !registry.ServedFromCache(ws[i]) {
			t.Fatalf("watcher %d is not served from the cache", i)
		}
	}
	var wg sync.WaitGroup
	for wr := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				name := fmt.Sprintf("s-%d-%d", wr, i)
				if _, err := r.Create(ctx, nsSecret("default", name, nil)); err != nil {
					t.Error(err)
					return
				}
				if _, err := r.Patch(ctx, "Secret", "default", name, []byte(`{"metadata":{"labels":{"v":"2"}}}`), false); err != nil {
					t.Error(err)
					return
				}
				if i%2 == 0 {
					if _, _, err := r.Delete(ctx, "Secret", "default", name, api.DeleteOptions{Force: true}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	const total = writers * (perWriter*2 + perWriter/2)
	var want []string
	for len(want) < total {
		ev := <-ref.Events()
		typ := map[store.EventType]string{store.EventPut: "PUT", store.EventDelete: api.Deleted}[ev.Type]
		if typ != "" {
			want = append(want, fmt.Sprintf("%s %d", typ, ev.Revision))
		}
	}
	got := make([][]string, watchers)
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for len(got[i]) < total {
				select {
				case ev, ok := <-w.Events():
					if !ok {
						t.Errorf("watcher %d ended: %v", i, w.Err())
						return
					}
					switch ev.Type {
					case api.Bookmark:
					case api.Added, api.Modified:
						got[i] = append(got[i], "PUT "+ev.Object.ResourceVersion)
					default:
						got[i] = append(got[i], ev.Type+" "+ev.Object.ResourceVersion)
					}
				case <-time.After(30 * time.Second):
					t.Errorf("watcher %d: %d of %d changes after 30s", i, len(got[i]), total)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i := range ws {
		if fmt.Sprint(got[i]) != fmt.Sprint(want) {
			t.Fatalf("watcher %d saw %d changes, not the store's %d in order:\n got %v\nwant %v", i, len(got[i]), len(want), got[i], want)
		}
	}
	// Exactly once: nothing more arrives but bookmarks.
	mustCreate(t, r, nsSecret("default", "last", nil))
	for _, w := range ws {
		expectChanges(t, w, "ADDED default/last")
	}
}

// bounds are the two limits of a watch cache's ring, each set so that it
// alone drops entries: at most 30 entries, or about 60 KiB of entries that
// each hold a bigSecret (about 4 KiB).
var bounds = []struct {
	name     string
	capacity int
	maxBytes int64
}{
	{"count bound", 30, 0},
	{"byte bound", 0, 60 << 10},
}

// bigSecret is a Secret in ns with 2 KiB of data.
func bigSecret(ns, name string) *api.Object {
	return testkit.Secret(ns, name, map[string]string{"k": strings.Repeat("x", 2<<10)})
}

func TestWatchCache_FirstWatchOfAKindReplaysFromItsVersionThroughTheCache(t *testing.T) {
	r, _ := newCachedRegistry(t, 0, time.Hour)
	var rvs []string
	for i := range 5 {
		rvs = append(rvs, mustCreate(t, r, nsSecret("default", fmt.Sprintf("a%d", i), nil)).ResourceVersion)
	}
	first := mustWatch(t, r, "default", rvs[1], "")
	if !registry.ServedFromCache(first) {
		t.Fatal("the first watch is not served from the cache it started")
	}
	expectChanges(t, first, "ADDED default/a2", "ADDED default/a3", "ADDED default/a4")
	second := mustWatch(t, r, "", rvs[3], "") // inside the window the first one opened
	if !registry.ServedFromCache(second) {
		t.Fatal("the second watch is not served from the cache")
	}
	expectChanges(t, second, "ADDED default/a4")
	older := mustWatch(t, r, "default", rvs[0], "") // before the window: its own etcd watch
	if registry.ServedFromCache(older) {
		t.Fatal("a watch from before the window is served from the cache")
	}
	expectChanges(t, older, "ADDED default/a1", "ADDED default/a2", "ADDED default/a3", "ADDED default/a4")
	mustCreate(t, r, nsSecret("default", "b", nil))
	for _, w := range []api.Watcher{first, second, older} {
		expectChanges(t, w, "ADDED default/b")
	}
}

func TestWatchCache_CompactedVersionIsGoneInsideAndOutsideTheWindow(t *testing.T) {
	r, s := newCachedRegistry(t, 20, time.Hour)
	ctx := sysCtx()
	old := mustCreate(t, r, nsSecret("default", "before-cache", nil)).ResourceVersion
	mustWatch(t, r, "default", currentRV(t, s), "") // starts the cache after old
	inside := mustCreate(t, r, nsSecret("default", "in-cache", nil)).ResourceVersion
	mustCreate(t, r, nsSecret("default", "later", nil))
	rev, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, rv string }{{"outside the window", old}, {"inside the window", inside}} {
		if _, err := r.Watch(ctx, "Secret", "default", api.ListOptions{ResourceVersion: tc.rv}); !errors.Is(err, api.ErrExpired) {
			t.Errorf("%s: watch from compacted version %s: %v, want Gone", tc.name, tc.rv, err)
		}
	}
	if _, err := r.Watch(ctx, "Secret", "default", api.ListOptions{ResourceVersion: strconv.FormatInt(rev+1000, 10)}); api.ReasonOf(err) != api.ReasonBadRequest {
		t.Errorf("watch from a future version: %v, want BadRequest", err)
	}
}

func TestWatchCache_SelectorTransitionsAddAndDelete(t *testing.T) {
	r, s := newCachedRegistry(t, 0, time.Hour)
	ctx := sysCtx()
	w := mustWatch(t, r, "default", currentRV(t, s), "app=web")
	if !registry.ServedFromCache(w) {
		t.Fatal("not served from the cache")
	}
	patch := func(name, labels string) string {
		out, err := r.Patch(ctx, "Secret", "default", name, []byte(`{"metadata":{"labels":`+labels+`}}`), false)
		if err != nil {
			t.Fatal(err)
		}
		return out.ResourceVersion
	}
	del := func(name string) string {
		if _, _, err := r.Delete(ctx, "Secret", "default", name, api.DeleteOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		return currentRV(t, s) // nothing else writes: the deletion's revision
	}
	steps := []struct {
		name   string
		do     func() string // returns the resourceVersion of the change
		want   string        // "" when the watcher sees nothing
		labels string        // the labels the event's object carries
	}{
		{"created outside the selection", func() string { return mustCreate(t, r, nsSecret("default", "p", nil)).ResourceVersion }, "", ""},
		{"starts matching", func() string { return patch("p", `{"app":"web"}`) }, api.Added, "map[app:web]"},
		{"changes while matching", func() string { return patch("p", `{"x":"1"}`) }, api.Modified, "map[app:web x:1]"},
		{"stops matching: its latest state", func() string { return patch("p", `{"app":"db"}`) }, api.Deleted, "map[app:db x:1]"},
		{"deleted outside the selection", func() string { return del("p") }, "", ""},
		{"created matching", func() string {
			return mustCreate(t, r, nsSecret("default", "q", map[string]string{"app": "web"})).ResourceVersion
		}, api.Added, "map[app:web]"},
		{"deleted while matching: at the deletion's version", func() string { return del("q") }, api.Deleted, "map[app:web]"},
	}
	for _, st := range steps {
		rv := st.do()
		if st.want == "" {
			continue // the next expected event proves nothing came
		}
		ev := nextChange(t, w)
		if ev.Type != st.want || ev.Object.ResourceVersion != rv || fmt.Sprint(ev.Object.Labels) != st.labels {
			t.Fatalf("%s: got %s rv %s labels %v, want %s rv %s labels %s", st.name,
				ev.Type, ev.Object.ResourceVersion, ev.Object.Labels, st.want, rv, st.labels)
		}
	}
	mustCreate(t, r, nsSecret("default", "end", map[string]string{"app": "web"}))
	expectChanges(t, w, "ADDED default/end")
}

func TestWatchCache_NamespaceFiltering(t *testing.T) {
	r, s := newCachedRegistry(t, 0, time.Hour)
	ctx := sysCtx()
	for _, ns := range []string{"a", "b", "ab"} {
		if err := r.EnsureNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, r, nsSecret("a", "x1", nil))
	mustCreate(t, r, nsSecret("b", "y1", nil))
	from := currentRV(t, s)
	tests := []struct {
		ns, rv string
		want   []string
	}{
		{"a", "", []string{"ADDED a/x1", "ADDED a/x2", "ADDED a/x3"}}, // the list first
		{"b", from, []string{"ADDED b/y2"}},
		{"", from, []string{"ADDED a/x2", "ADDED ab/z", "ADDED b/y2", "ADDED a/x3"}},
	}
	ws := make([]api.Watcher, len(tests))
	for i, tc := range tests {
		ws[i] = mustWatch(t, r, tc.ns, tc.rv, "")
	}
	nsw, err := r.Watch(ctx, "Namespace", "a", api.ListOptions{ResourceVersion: from}) // cluster-scoped: ns is ignored
	if err != nil {
		t.Fatal(err)
	}
	defer nsw.Stop()
	mustCreate(t, r, nsSecret("a", "x2", nil))
	mustCreate(t, r, nsSecret("ab", "z", nil)) // "a" is a prefix of "ab": not in a
	mustCreate(t, r, nsSecret("b", "y2", nil))
	if err := r.EnsureNamespace(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, r, nsSecret("a", "x3", nil))
	mustCreate(t, r, nsSecret("b", "end", nil))
	for i, tc := range tests {
		expectChanges(t, ws[i], tc.want...)
	}
	expectChanges(t, ws[1], "ADDED b/end") // nothing of a came between
	expectChanges(t, nsw, "ADDED c")
}

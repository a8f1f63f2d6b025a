package watchcache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/storetest"
)

// The tests follow a namespaced kind "Thing" stored as plain JSON.
const prefix = "/test/things/"

func decode(kv *store.KV) (*api.Object, error) {
	o := &api.Object{}
	if err := json.Unmarshal(kv.Value, o); err != nil {
		return nil, err
	}
	o.ResourceVersion = strconv.FormatInt(kv.ModRevision, 10)
	return o, nil
}

var things = Source{Kind: "Thing", Prefix: prefix, Namespaced: true, Decode: decode}

// harness is a real store with caches over it.
type harness struct {
	t  *testing.T
	s  *store.Store
	cs *Caches
}

// start runs a store and caches with opts (bookmarks hourly unless set).
func start(t *testing.T, opts Options) *harness {
	t.Helper()
	s, _ := storetest.Start(t)
	if opts.BookmarkInterval == 0 {
		opts.BookmarkInterval = time.Hour
	}
	cs := New(s, opts)
	t.Cleanup(cs.Close) // runs before the store stops
	return &harness{t: t, s: s, cs: cs}
}

// put writes object ns/name with labels and a data field of value; it
// returns the write's revision.
func (h *harness) put(ns, name string, lbls map[string]string, value string) int64 {
	h.t.Helper()
	o := api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Thing"}}
	o.Name, o.Namespace, o.Labels = name, ns, lbls
	data, _ := json.Marshal(value)
	o.Fields = map[string]json.RawMessage{"data": data}
	raw, err := json.Marshal(o)
	if err != nil {
		h.t.Fatal(err)
	}
	rev, err := h.s.Txn(context.Background(), nil, store.Put(prefix+ns+"/"+name, raw))
	if err != nil {
		h.t.Fatal(err)
	}
	return rev
}

func (h *harness) rev() int64 {
	h.t.Helper()
	rev, err := h.s.Revision(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return rev
}

// watch starts a watch of namespace ns through selector sel after rv.
func (h *harness) watch(ns, sel string, rv int64) api.Watcher {
	h.t.Helper()
	s, err := labels.Parse(sel)
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := h.cs.Cache(context.Background(), things, rv)
	if err != nil {
		h.t.Fatal(err)
	}
	w := c.Watch(context.Background(), Request{NS: ns, Sel: Selection{Labels: s}, RV: rv})
	h.t.Cleanup(w.Stop)
	return w
}

// cache returns the running cache of things.
func (h *harness) cache() *Cache {
	h.t.Helper()
	h.cs.mu.Lock()
	defer h.cs.mu.Unlock()
	c := h.cs.caches[things.Kind]
	if c == nil {
		h.t.Fatal("no cache runs")
	}
	return c
}

// usage describes a cache's ring.
type usage struct {
	entries    int
	bytes      int64 // counted against the byte bound
	entryBytes int64 // of which the entries' own sizes (the rest: encodings)
	since      int64 // the ring holds every change after since
	rev        int64 // every change up to rev has been seen
}

func (c *Cache) usage() usage {
	c.mu.RLock()
	defer c.mu.RUnlock()
	u := usage{entries: int(c.head - c.first), bytes: c.bytes.Load(), since: c.since, rev: c.rev}
	for s := c.first; s < c.head; s++ {
		u.entryBytes += c.at(s).size
	}
	return u
}

// next returns the next event that is not a BOOKMARK; it fails the test
// when the stream ends or nothing arrives within 20s.
func next(t *testing.T, w api.Watcher) api.ObjectEvent {
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

// expect reads len(want) changes, each "TYPE namespace/name".
func expect(t *testing.T, w api.Watcher, want ...string) []api.ObjectEvent {
	t.Helper()
	var out []api.ObjectEvent
	for _, wnt := range want {
		ev := next(t, w)
		if got := ev.Type + " " + api.Key(ev.Object.Namespace, ev.Object.Name); got != wnt {
			t.Fatalf("event %q, want %q", got, wnt)
		}
		out = append(out, ev)
	}
	return out
}

func TestCache_ResumeInsideAndOutsideTheWindow(t *testing.T) {
	for _, b := range []struct {
		name string
		opts Options // each bound alone drops entries: 30 entries, or about 60 KiB of 2 KiB objects
	}{
		{"count bound", Options{Capacity: 30}},
		{"byte bound", Options{MaxBytes: 60 << 10}},
	} {
		t.Run(b.name, func(t *testing.T) {
			h := start(t, b.opts)
			h.watch("default", "", h.rev()) // starts the cache
			var revs []int64
			var names []string
			write := func(name string) {
				revs = append(revs, h.put("default", name, nil, strings.Repeat("x", 2<<10)))
				names = append(names, "ADDED default/"+name)
			}
			for i := range 10 {
				write(fmt.Sprintf("a%d", i))
			}
			w := h.watch("default", "", revs[2])
			if !Shared(w) {
				t.Fatal("a version inside the window is not served from the ring")
			}
			expect(t, w, names[3:]...)

			for i := range 40 { // more than the ring holds: a2 falls out of the window
				write(fmt.Sprintf("b%d", i))
			}
			expect(t, w, names[10:]...) // the cache has seen every change
			u := h.cache().usage()
			switch {
			case b.opts.Capacity > 0 && u.entries != b.opts.Capacity:
				t.Fatalf("%d entries, want the capacity %d", u.entries, b.opts.Capacity)
			case b.opts.MaxBytes > 0 && (u.entryBytes > b.opts.MaxBytes || u.entries < 5 || u.entries >= 30):
				// Encodings made after the last arrival may overshoot
				// the bound until the next one: the entries may not.
				t.Fatalf("%d entries of %d bytes, want 5 to 29 within the bound %d", u.entries, u.entryBytes, b.opts.MaxBytes)
			case revs[2] >= u.since:
				t.Fatalf("the window starts after %d, not after a2's %d", u.since, revs[2])
			}
			inside := len(revs) - 5
			if revs[inside] < u.since {
				t.Fatalf("the window starts after %d, not before b35's %d", u.since, revs[inside])
			}
			tests := []struct {
				name   string
				from   int64
				shared bool
				want   []string
			}{
				{"inside the window", revs[inside], true, names[inside+1:]},
				{"outside the window", revs[2], false, names[3:]},
			}
			var open []api.Watcher
			for _, tc := range tests {
				w := h.watch("default", "", tc.from)
				if Shared(w) != tc.shared {
					t.Fatalf("%s: served from the ring = %v, want %v", tc.name, !tc.shared, tc.shared)
				}
				expect(t, w, tc.want...)
				open = append(open, w)
			}
			// Both go on live, each change once.
			h.put("default", "c", nil, "")
			for i, w := range open {
				if ev := next(t, w); ev.Type != api.Added || ev.Object.Name != "c" {
					t.Fatalf("%s: live event %s %s, want ADDED c", tests[i].name, ev.Type, ev.Object.Name)
				}
			}
		})
	}
}

func TestCache_EntriesKeepNoCopyOfThePreviousVersion(t *testing.T) {
	h := start(t, Options{})
	const updates, size = 25, 128 << 10
	if _, err := h.cs.Cache(context.Background(), things, h.rev()); err != nil { // no watcher: no encodings
		t.Fatal(err)
	}
	var last int64
	for i := range updates { // labels unchanged: the usual update
		last = h.put("default", "big", map[string]string{"app": "big"}, strings.Repeat(string(rune('a'+i%26)), size))
	}
	c := h.cache()
	for deadline := time.Now().Add(20 * time.Second); c.usage().rev < last; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the cache has not seen revision %d after 20s", last)
		}
	}
	kv, err := h.s.Get(context.Background(), prefix+"default/big")
	if err != nil {
		t.Fatal(err)
	}
	u := c.usage()
	if u.entries != updates || u.bytes != u.entryBytes {
		t.Fatalf("cache %+v, want %d entries and no encodings", u, updates)
	}

	// What the ring retains is what the heap loses when the ring empties,
	// once the heap has settled (the store frees its write buffers at its
	// own pace).
	heap := func() int64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	for range 50 {
		time.Sleep(100 * time.Millisecond)
		now := heap()
		settled := now > before-64<<10 && now < before+64<<10
		before = now
		if settled {
			break
		}
	}
	c.mu.Lock()
	for c.first < c.head {
		c.drop()
	}
	c.mu.Unlock()
	retained := before - heap()
	if n := c.bytes.Load(); n != 0 {
		t.Fatalf("the empty ring counts %d bytes", n)
	}

	objects := int64(u.entries) * int64(len(kv.Value)) // one decoded copy per entry
	t.Logf("%d entries of a %d-byte object: %d bytes retained, %d counted", u.entries, len(kv.Value), retained, u.bytes)
	if retained < objects/2 || retained > objects*3/2 {
		t.Fatalf("the ring retained %d bytes for %d entries of a %d-byte object: want about one copy each (%d), not two",
			retained, u.entries, len(kv.Value), objects)
	}
	if u.bytes < retained*7/10 || u.bytes > retained*14/10 {
		t.Fatalf("the cache counts %d bytes against its bound, but retains %d", u.bytes, retained)
	}
}

func TestCache_OneSharedEncodingPerObjectCountedWhileInTheRing(t *testing.T) {
	h := start(t, Options{Capacity: 3})
	from := h.rev()
	all, web := h.watch("default", "", from), h.watch("", "app=web", from)
	c := h.cache()
	web1 := map[string]string{"app": "web", "v": "1"}
	h.put("default", "e", web1, "one")
	h.put("default", "e", map[string]string{"app": "db"}, "two") // leaves web's selection
	var encoded int64                                            // the JSON of each object, counted once
	for _, step := range []struct {
		name       string
		all, web   string // the event each watcher gets
		wantLabels map[string]string
	}{
		{"created", api.Added, api.Added, web1},
		{"changed, leaving a selection", api.Modified, api.Deleted, map[string]string{"app": "db"}},
	} {
		a, w := next(t, all), next(t, web)
		if a.Type != step.all || w.Type != step.web {
			t.Fatalf("%s: events %s and %s, want %s and %s", step.name, a.Type, w.Type, step.all, step.web)
		}
		want, err := json.Marshal(a.Object)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Raw, want) || fmt.Sprint(a.Object.Labels) != fmt.Sprint(step.wantLabels) {
			t.Fatalf("%s: Raw\n%s\nwant json.Marshal's\n%s", step.name, a.Raw, want)
		}
		if w.Object != a.Object || &w.Raw[0] != &a.Raw[0] {
			t.Fatalf("%s: the watchers got different objects or encodings, not the shared ones", step.name)
		}
		encoded += int64(len(a.Raw))
	}
	if u := c.usage(); u.bytes != u.entryBytes+encoded {
		t.Fatalf("the cache counts %d bytes, want its entries' %d and the %d of one encoding per object", u.bytes, u.entryBytes, encoded)
	}
	// Once e's entries leave the ring, their encodings are no longer
	// counted; the newer ones are.
	encoded = 0
	for _, name := range []string{"f1", "f2", "f3"} {
		h.put("default", name, nil, "")
	}
	for _, ev := range expect(t, all, "ADDED default/f1", "ADDED default/f2", "ADDED default/f3") {
		encoded += int64(len(ev.Raw))
	}
	if u := c.usage(); u.entries != 3 || u.bytes != u.entryBytes+encoded {
		t.Fatalf("after e left the ring: %+v, want 3 entries and only f1..f3's encodings (%d bytes) counted", u, encoded)
	}
}

func TestCache_EntryLargerThanTheByteBoundIsKeptAlone(t *testing.T) {
	h := start(t, Options{MaxBytes: 1})
	w := h.watch("default", "", h.rev())
	a := h.put("default", "a", nil, "")
	expect(t, w, "ADDED default/a")
	h.put("default", "b", nil, "")
	expect(t, w, "ADDED default/b")
	if u := h.cache().usage(); u.entries != 1 || u.since != a {
		t.Fatalf("cache %+v, want only b's entry, after a's version %d", u, a)
	}
	from := h.watch("default", "", a)
	if !Shared(from) {
		t.Fatal("a watch from the version before the only entry is not served from the ring")
	}
	expect(t, from, "ADDED default/b")
}

func TestCache_DecodesEachStoredValueOnceAndFiltersOnThePreviousLabels(t *testing.T) {
	h := start(t, Options{})
	var decodes atomic.Int64
	counted := things
	counted.Decode = func(kv *store.KV) (*api.Object, error) {
		decodes.Add(1)
		return decode(kv)
	}
	from := h.rev()
	c, err := h.cs.Cache(context.Background(), counted, from)
	if err != nil {
		t.Fatal(err)
	}
	w := c.Watch(context.Background(), Request{NS: "default", Sel: Selection{Labels: labels.SelectorFromSet(labels.Set{"app": "b"})}, RV: from})
	t.Cleanup(w.Stop)
	h.put("default", "x", map[string]string{"app": "a"}, "v1") // not selected
	h.put("default", "x", map[string]string{"app": "b"}, "v2") // now selected: ADDED
	h.put("default", "x", map[string]string{"app": "b"}, "v3") // MODIFIED
	h.put("default", "x", map[string]string{"app": "c"}, "v4") // no longer selected: DELETED
	if _, err := h.s.Txn(context.Background(), nil, store.Del(prefix+"default/x")); err != nil {
		t.Fatal(err)
	}
	h.put("default", "y", map[string]string{"app": "b"}, "v1") // ADDED; marks the end
	evs := expect(t, w, "ADDED default/x", "MODIFIED default/x", "DELETED default/x", "ADDED default/y")
	if got := string(evs[2].Object.Fields["data"]); got != `"v4"` {
		t.Fatalf("the DELETED event carries data %s, want the latest state v4", got)
	}
	// Five puts, each decoded once; the previous value of every later put
	// and of the delete was the object the cache had decoded already.
	if n := decodes.Load(); n != 5 {
		t.Fatalf("%d decodes for 5 puts and a delete, want 5", n)
	}
}

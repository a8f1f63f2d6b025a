package registry_test

import (
	"bytes"
	"encoding/json"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/storetest"
)

func TestWatchCache_EntriesKeepNoCopyOfThePreviousVersion(t *testing.T) {
	r, s := newCachedRegistry(t, 0, time.Hour)
	ctx := sysCtx()
	const updates, size = 24, 128 << 10
	w := mustWatch(t, r, "default", currentRV(t, s), "")
	value := func(i int) string { return strings.Repeat(string(rune('a'+i%26)), size) }
	big := secret("big", map[string]string{"k": value(0)})
	big.Labels = map[string]string{"app": "big"}
	mustCreate(t, r, big)
	var last string
	for i := 1; i <= updates; i++ { // labels unchanged: the usual update
		out, err := r.Patch(ctx, "Secret", "default", "big", []byte(`{"stringData":{"k":"`+value(i)+`"}}`), false)
		if err != nil {
			t.Fatal(err)
		}
		last = out.ResourceVersion
	}
	for nextChange(t, w).Object.ResourceVersion != last { // the ring holds every change
	}
	obj, err := r.Get(ctx, "Secret", "default", "big")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := registry.WatchCacheUsage(r, "Secret")
	if !ok || st.Entries != updates+1 {
		t.Fatalf("cache %+v (running %v), want %d entries", st, ok, updates+1)
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
		h := heap()
		settled := h > before-64<<10 && h < before+64<<10
		before = h
		if settled {
			break
		}
	}
	if !registry.DropWatchCacheEntries(r, "Secret") {
		t.Fatal("no watch cache runs")
	}
	retained := before - heap()
	if st, _ := registry.WatchCacheUsage(r, "Secret"); st.Bytes != 0 {
		t.Fatalf("the empty ring counts %d bytes", st.Bytes)
	}

	objects := int64(st.Entries) * int64(len(raw)) // one decoded copy per entry
	t.Logf("%d entries of a %d-byte object: %d bytes retained, %d counted", st.Entries, len(raw), retained, st.Bytes)
	if retained < objects/2 || retained > objects*3/2 {
		t.Fatalf("the ring retained %d bytes for %d entries of a %d-byte object: want about one copy each (%d), not two",
			retained, st.Entries, len(raw), objects)
	}
	if st.Bytes < retained*7/10 || st.Bytes > retained*14/10 {
		t.Fatalf("the cache counts %d bytes against its bound, but retains %d", st.Bytes, retained)
	}
}

func TestWatchCache_OneEncodingPerObjectCountedWhileInTheRing(t *testing.T) {
	r, s := newCachedRegistry(t, 3, time.Hour)
	w := mustWatch(t, r, "default", currentRV(t, s), "")
	enc := w.(api.EventEncoder)
	mustCreate(t, r, nsSecret("default", "e", nil))
	ev := expectChanges(t, w, "ADDED default/e")[0]
	usage := func() registry.WatchCacheStats {
		t.Helper()
		st, ok := registry.WatchCacheUsage(r, "Secret")
		if !ok {
			t.Fatal("no watch cache runs")
		}
		return st
	}
	st := usage()
	if st.Bytes != st.EntryBytes || st.EntryBytes <= 0 {
		t.Fatalf("before any encoding the cache counts %d bytes, its entries %d", st.Bytes, st.EntryBytes)
	}
	line, err := enc.EncodeEvent(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := st.Bytes + int64(len(line))
	if got := usage().Bytes; got != want {
		t.Fatalf("after encoding a %d-byte line the cache counts %d bytes, want %d", len(line), got, want)
	}
	for _, typ := range []string{api.Added, api.Modified, api.Deleted, api.Added} {
		got, err := enc.EncodeEvent(api.Event{Type: typ, Object: ev.Object})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(ev.Object)
		wantLine, _ := json.Marshal(api.WatchEvent{Type: typ, Object: raw})
		if !bytes.Equal(got, append(wantLine, '\n')) {
			t.Fatalf("%s encoded as\n%s\nwant\n%s", typ, got, wantLine)
		}
		if typ == api.Added && &got[0] != &line[0] {
			t.Fatal("the ADDED line is encoded again, not shared")
		}
		if n := usage().Bytes; n != want {
			t.Fatalf("after encoding %s the cache counts %d bytes, want %d: one encoding per object", typ, n, want)
		}
	}
	// Once the entry leaves the ring, its line is no longer counted.
	for _, name := range []string{"f1", "f2", "f3"} {
		mustCreate(t, r, nsSecret("default", name, nil))
	}
	expectChanges(t, w, "ADDED default/f1", "ADDED default/f2", "ADDED default/f3")
	if st := usage(); st.Entries != 3 || st.Bytes != st.EntryBytes {
		t.Fatalf("after e left the ring: %+v, want 3 entries and no encodings counted", st)
	}
}

func TestWatchCache_EntryLargerThanTheByteBoundIsKeptAlone(t *testing.T) {
	r, s := newBoundedRegistry(t, 0, 1, time.Hour)
	w := mustWatch(t, r, "default", currentRV(t, s), "")
	a := mustCreate(t, r, nsSecret("default", "a", nil))
	expectChanges(t, w, "ADDED default/a")
	mustCreate(t, r, nsSecret("default", "b", nil))
	expectChanges(t, w, "ADDED default/b")
	st, ok := registry.WatchCacheUsage(r, "Secret")
	if !ok || st.Entries != 1 || st.Since != rvOf(t, a.ResourceVersion) {
		t.Fatalf("cache %+v (running %v), want only b's entry, after a's version %s", st, ok, a.ResourceVersion)
	}
	from := mustWatch(t, r, "default", a.ResourceVersion, "")
	if !registry.ServedFromCache(from) {
		t.Fatal("a watch from the version before the only entry is not served from the cache")
	}
	expectChanges(t, from, "ADDED default/b")
}

func TestWatchCache_SlowStoreDoesNotHoldUpClose(t *testing.T) {
	_, endpoint := storetest.Start(t)
	p := startGateProxy(t, strings.TrimPrefix(endpoint, "http://"))
	cli, err := store.Dial(sysCtx(), []string{"http://" + p.addr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	enc, err := registry.LoadOrCreateKey(filepath.Join(t.TempDir(), "key"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := registry.New(store.New(cli), registry.Options{Kinds: kinds.All(kinds.Deps{}), Encryption: enc, BookmarkInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Init(sysCtx()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)

	p.pause()
	type result struct {
		w   api.Watcher
		err error
	}
	watched := make(chan result, 1)
	go func() { // the kind's first watch: it reads the store's revision
		w, err := r.Watch(sysCtx(), "Secret", "default", api.ListOptions{})
		watched <- result{w, err}
	}()
	select {
	case <-p.held:
	case res := <-watched:
		t.Fatalf("the watch returned (%v) without reading the store", res.err)
	case <-time.After(20 * time.Second):
		t.Fatal("the watch sent nothing to the store")
	}
	closed := make(chan struct{})
	go func() {
		r.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close waits for a watch's store read")
	}
	select {
	case res := <-watched:
		t.Fatalf("the watch returned (%v) while its store read was held", res.err)
	default:
	}
	p.resume()
	res := <-watched
	if res.err == nil {
		res.w.Stop()
	}
	if api.ReasonOf(res.err) != api.ReasonUnavailable {
		t.Fatalf("a watch whose store read ended after Close: %v, want ServiceUnavailable", res.err)
	}
}

// gateProxy forwards TCP connections to a target; while paused it holds
// what clients send (and reports, on held, that something was held).
type gateProxy struct {
	ln     net.Listener
	target string
	held   chan struct{}

	mu     sync.Mutex
	cond   *sync.Cond
	paused bool
	closed bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startGateProxy(t *testing.T, target string) *gateProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &gateProxy{ln: ln, target: target, held: make(chan struct{}, 1)}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *gateProxy) addr() string { return p.ln.Addr().String() }

func (p *gateProxy) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = true
}

func (p *gateProxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = false
	p.cond.Broadcast()
}

func (p *gateProxy) close() {
	p.mu.Lock()
	p.closed, p.paused = true, false
	p.cond.Broadcast()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

func (p *gateProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			in.Close()
			out.Close()
			return
		}
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.copy(out, in, true)
		go p.copy(in, out, false)
	}
}

func (p *gateProxy) copy(dst, src net.Conn, gated bool) {
	defer p.wg.Done()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && gated {
			p.mu.Lock()
			if p.paused {
				select {
				case p.held <- struct{}{}:
				default:
				}
			}
			for p.paused {
				p.cond.Wait()
			}
			p.mu.Unlock()
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF, or a connection closed
		}
	}
}

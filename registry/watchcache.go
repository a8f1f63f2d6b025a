package registry

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// The watch cache: one etcd watch per kind, shared by every API watcher of
// that kind.
//
//   - A kind's cache starts lazily, on the first Watch of that kind, and runs
//     until Registry.Close (or until its etcd watch fails for good; the next
//     Watch then starts a new one). Its etcd watch covers every namespace
//     and starts after that first watch's resourceVersion (after the
//     store's current revision for a watch that lists first), so the first
//     watcher is served from the cache too.
//   - Each store event is decoded (and decrypted) once into an immutable
//     cacheEntry (see there for what it keeps of the previous version),
//     kept in a ring of the last entries, bounded twice: at most
//     defaultWatchCacheCapacity entries, and about defaultWatchCacheBytes
//     of memory, counting the entries' objects (estimated from their stored
//     size) and the one wire encoding per object that the ring caches once
//     a server has asked for it. Both bounds are enforced as entries
//     arrive, by dropping the oldest (never the newest); encodings made
//     between arrivals may overshoot the byte bound until the next one.
//     Watchers read the ring at their own pace, each in its own goroutine,
//     and filter by namespace and label selector themselves: the cache's
//     goroutine never waits for a watcher.
//   - The ring covers every change after since: a watch from a
//     resourceVersion N >= since is served from the ring, then live. A watch
//     from an older N (not compacted) is served by its own etcd watch, as
//     before the cache existed (watchDirect): correct, only costlier. A
//     compacted N is refused with 410 Gone either way.
//   - A watcher that falls a whole ring behind (its next entry was
//     dropped, by either bound) is ended with TooManyRequests: the client
//     watches again from the last resourceVersion it received, and loses
//     nothing.
//   - Every BookmarkInterval the cache asks etcd for a progress
//     notification; each one becomes a bookmark entry in the ring, which
//     every watcher passes on as a BOOKMARK when it reaches it.

// defaultWatchCacheCapacity is how many events a kind's ring keeps at most.
const defaultWatchCacheCapacity = 10000

// defaultWatchCacheBytes bounds the memory a kind's ring holds: its
// entries' decoded objects and their cached encodings, approximately.
const defaultWatchCacheBytes = 64 << 20

// watchCaches are a registry's caches, by kind name. Its zero value is ready
// to use.
type watchCaches struct {
	mu       sync.Mutex
	closed   bool
	caches   map[string]*watchCache
	capacity int   // ring size; 0 means defaultWatchCacheCapacity
	maxBytes int64 // byte bound; 0 means defaultWatchCacheBytes
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup // the caches' goroutines
}

// Close stops the registry's shared watch caches and waits for their
// goroutines. Watches served from a cache deliver what the cache had and
// then end with a ServiceUnavailable error; watches served by their own
// etcd watch are not affected (they end with their context). A Watch
// after Close fails with ServiceUnavailable. Call it before closing the
// store; it is idempotent and safe for concurrent use. The other methods
// keep working.
func (r *Registry) Close() {
	w := &r.watch
	w.mu.Lock()
	w.closed = true
	if w.cancel != nil {
		w.cancel()
	}
	w.mu.Unlock()
	w.wg.Wait()
}

// cache returns the running cache of kind k, starting it when there is
// none: from revision from (its window then begins there, and the store
// replays the changes after it; from must not be compacted), or with from 0
// from the store's current revision, read with ctx. The store is read
// without holding the caches' lock, so a slow store holds up only the
// watches that wait for it. Errors: ServiceUnavailable after Close,
// InternalError when the store does not answer.
func (r *Registry) cache(ctx context.Context, k *Kind, from int64) (*watchCache, error) {
	w := &r.watch
	if c, err := w.running(k); c != nil || err != nil {
		return c, err
	}
	rev := from
	if rev == 0 {
		var err error
		if rev, err = r.store.Revision(ctx); err != nil {
			return nil, api.NewInternal(err)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, errClosed()
	}
	if c := w.caches[k.Kind]; c != nil {
		return c, nil // started meanwhile: the caller's subscribe checks its window
	}
	if w.ctx == nil {
		w.ctx, w.cancel = context.WithCancel(context.Background())
		w.caches = map[string]*watchCache{}
	}
	capacity := w.capacity
	if capacity <= 0 {
		capacity = defaultWatchCacheCapacity
	}
	maxBytes := w.maxBytes
	if maxBytes <= 0 {
		maxBytes = defaultWatchCacheBytes
	}
	c := &watchCache{r: r, k: k, prefix: KeyPrefix + k.Plural + "/", ring: make([]*cacheEntry, capacity),
		maxBytes: maxBytes, since: rev, rev: rev, notify: make(chan struct{})}
	w.caches[k.Kind] = c
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		c.run(w.ctx)
		w.mu.Lock()
		if w.caches[k.Kind] == c {
			delete(w.caches, k.Kind)
		}
		w.mu.Unlock()
	}()
	return c, nil
}

// running returns the running cache of kind k, nil when there is none, and
// ServiceUnavailable after Close.
func (w *watchCaches) running(k *Kind) (*watchCache, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, errClosed()
	}
	return w.caches[k.Kind], nil
}

func errClosed() error { return api.NewStatus(api.ReasonUnavailable, "the registry is closed") }

// watchCache is the shared watch of one kind.
type watchCache struct {
	r      *Registry
	k      *Kind
	prefix string

	maxBytes int64 // the byte bound

	mu     sync.RWMutex
	ring   []*cacheEntry // entry seq lives at ring[seq%len(ring)]; the other slots are nil
	first  uint64        // seq of the oldest entry
	head   uint64        // seq of the next entry
	since  int64         // every change after since is in the ring
	rev    int64         // every change up to rev has been seen
	err    error         // set when the cache has stopped: watchers end with it
	notify chan struct{} // closed (and replaced) when entries arrive or the cache stops

	// bytes approximates the memory the ring holds: its entries' sizes
	// (changed under mu) plus the encodings made of them (added by
	// watchers as they make them).
	bytes     atomic.Int64
	encodings sync.Map // *api.Object (cur or gone of a ring entry) → *encoding
}

// maxBatch bounds how many store events the cache appends under one lock,
// and how many entries a watcher copies out at a time.
const maxBatch = 256

// run follows the store from c.rev until ctx is done or the etcd watch
// fails for good. A failed etcd watch is restarted from c.rev+1, so
// watchers see nothing of it, unless that revision is compacted (watchers
// then end with Gone) or the store's client is closed.
func (c *watchCache) run(ctx context.Context) {
	tick := time.NewTicker(c.r.opts.BookmarkInterval)
	defer tick.Stop()
	sw := c.r.store.Watch(ctx, c.prefix, c.rev+1)
	defer func() { sw.Close() }()
	backoff := 50 * time.Millisecond
	batch := make([]*cacheEntry, 0, maxBatch)
	closing := func() { c.stop(api.NewStatus(api.ReasonUnavailable, "the watch cache is closing: watch again")) }
	for {
		select {
		case <-ctx.Done():
			closing()
			return
		case <-tick.C:
			_ = sw.RequestProgress(ctx) // failures surface on the event stream
		case ev, ok := <-sw.Events():
			if !ok {
				err := sw.Err()
				switch {
				case ctx.Err() != nil:
					closing()
					return
				case errors.Is(err, store.ErrCompacted):
					c.stop(api.NewGone("the watch cache fell behind a compaction: %v; list again", err))
					return
				case c.r.store.Client().Ctx().Err() != nil:
					c.stop(api.NewStatus(api.ReasonUnavailable, "the store is closed"))
					return
				}
				slog.Default().Warn("registry: watch cache: etcd watch ended; restarting", "kind", c.k.Kind, "err", err)
				select {
				case <-ctx.Done():
					closing()
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, 5*time.Second)
				c.mu.RLock()
				from := c.rev + 1
				c.mu.RUnlock()
				sw.Close()
				sw = c.r.store.Watch(ctx, c.prefix, from)
				continue
			}
			backoff = 50 * time.Millisecond
			batch = append(batch[:0], c.r.newEntry(c.k, ev))
		more:
			for len(batch) < maxBatch {
				select {
				case ev, ok := <-sw.Events():
					if !ok {
						break more // the next receive reports it
					}
					batch = append(batch, c.r.newEntry(c.k, ev))
				default:
					break more
				}
			}
			c.append(batch)
			clear(batch)
		}
	}
}

// append adds entries to the ring, dropping the oldest beyond either
// bound, and wakes the watchers.
func (c *watchCache) append(batch []*cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := uint64(len(c.ring))
	for _, e := range batch {
		if c.head-c.first == n {
			c.drop()
		}
		c.ring[c.head%n] = e
		c.head++
		c.rev = max(c.rev, e.rev)
		c.bytes.Add(e.size)
		for _, o := range []*api.Object{e.cur, e.gone} {
			if o != nil {
				c.encodings.Store(o, &encoding{obj: o, typ: e.natural(o), bytes: &c.bytes})
			}
		}
		for c.head-c.first > 1 && c.bytes.Load() > c.maxBytes {
			c.drop()
		}
	}
	close(c.notify)
	c.notify = make(chan struct{})
}

// drop removes the oldest entry from the ring. Call with mu held.
func (c *watchCache) drop() {
	i := c.first % uint64(len(c.ring))
	old := c.ring[i]
	c.ring[i] = nil
	c.first++
	c.since = max(c.since, old.rev)
	c.bytes.Add(-old.size)
	for _, o := range []*api.Object{old.cur, old.gone} {
		if o == nil {
			continue
		}
		if v, ok := c.encodings.LoadAndDelete(o); ok {
			v.(*encoding).forget()
		}
	}
}

// stop ends the cache: watchers deliver what the ring holds for them and
// then end with err.
func (c *watchCache) stop(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
	close(c.notify)
	c.notify = make(chan struct{})
}

// subscribe returns the seq of the first entry after revision n, or false
// when the ring no longer holds every change after n (or the cache has
// stopped): the caller then watches the store directly.
func (c *watchCache) subscribe(n int64) (uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.err != nil || n < c.since {
		return 0, false
	}
	first := c.first
	size := int(c.head - first)
	i := sort.Search(size, func(i int) bool { return c.at(first+uint64(i)).rev > n })
	return first + uint64(i), true
}

func (c *watchCache) at(seq uint64) *cacheEntry { return c.ring[seq%uint64(len(c.ring))] }

// read copies the entries from seq next on (at most maxBatch) into buf. It
// returns the channel that is closed when more arrive, the cache's error
// once it has stopped, and evicted when entry next has been dropped.
func (c *watchCache) read(next uint64, buf []*cacheEntry) (_ []*cacheEntry, notify <-chan struct{}, err error, evicted bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if next < c.first {
		return buf, nil, nil, true
	}
	for s := next; s < c.head && len(buf) < maxBatch; s++ {
		buf = append(buf, c.at(s))
	}
	return buf, c.notify, c.err, false
}

// encode returns the cached wire form of an event whose object came from
// the ring, falling back to marshaling.
func (c *watchCache) encode(ev api.Event) ([]byte, error) {
	if v, ok := c.encodings.Load(ev.Object); ok {
		return v.(*encoding).lineFor(ev.Type)
	}
	return encodeEvent(ev)
}

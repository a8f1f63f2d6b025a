// Package watchcache serves the registry's watches from one shared etcd
// watch per kind.
//
//   - A kind's Cache starts lazily, on the first watch of that kind
//     (Caches.Cache), and runs until Caches.Close (or until its etcd watch
//     fails for good; the next call then starts a new one). Its etcd watch
//     covers every namespace and starts after that first watch's
//     resourceVersion (after the store's current revision for a watch that
//     lists first), so the first watcher is served from the cache too.
//   - Each store event is decoded (and decrypted: Source.Decode) once into
//     an immutable entry (see there for what it keeps of the previous
//     version), kept in a ring of the last entries, bounded twice: at most
//     Options.Capacity entries, and about Options.MaxBytes of memory,
//     counting the entries' objects (estimated from their stored size) and
//     the one JSON encoding of each object that the cache keeps once a
//     watcher has delivered it. Both bounds are enforced as entries arrive,
//     by dropping the oldest (never the newest); encodings made between
//     arrivals may overshoot the byte bound until the next one. Watchers
//     read the ring at their own pace, each in its own goroutine, and filter
//     by namespace and label selector themselves: the cache's goroutine
//     never waits for a watcher.
//   - The ring covers every change after since: a watch from a
//     resourceVersion N >= since is served from the ring, then live. A watch
//     from an older N is served by its own etcd watch: correct, only
//     costlier. The caller refuses a compacted N before it asks.
//   - A watcher that falls too far behind is ended with TooManyRequests:
//     the client watches again from the last resourceVersion it received,
//     and loses nothing. Too far is a whole ring (its next entry was
//     dropped, by either bound), or, whether or not the ring is full, a
//     client that took none of the events waiting in the watcher's channel
//     while more than Options.WatcherBacklog changes or
//     Options.WatcherBacklogBytes bytes arrived. A client that stops
//     reading is thus ended after a bounded number of changes, and, with
//     those bounds below the ring's (as the defaults are), before any event
//     it holds leaves the ring; a watcher replaying the ring for a client
//     that reads is never ended for the distance it has to go.
//   - Every Options.BookmarkInterval the cache asks etcd for a progress
//     notification; each one becomes a bookmark entry in the ring, which
//     every watcher passes on as a BOOKMARK when it reaches it.
//
// The cache speaks no wire format. Each ADDED, MODIFIED or DELETED event a
// cache watcher delivers carries, in api.Event.Raw, the JSON of its object
// (json.Marshal's output), made once per object for every watcher, so a
// server that frames events needs not marshal them again. The cost is one
// marshal per change of a watched kind, even when no watcher needs it.
//
// The package knows nothing of the registry's kinds: a Source tells it
// where a kind's objects live and how to decode them.
package watchcache

import (
	"context"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// Default bounds of a kind's ring.
const (
	// DefaultCapacity is how many events a kind's ring keeps at most.
	DefaultCapacity = 10000
	// DefaultMaxBytes bounds the memory a kind's ring holds: its entries'
	// decoded objects and their cached encodings, approximately.
	DefaultMaxBytes = 64 << 20
	// DefaultWatcherBacklog is how many changes may wait for one watcher
	// before it is ended.
	DefaultWatcherBacklog = 5000
	// DefaultWatcherBacklogBytes bounds the bytes of the changes that may
	// wait for one watcher (their stored size) before it is ended.
	DefaultWatcherBacklogBytes = 16 << 20
)

// Source is what a cache needs to know of the kind it follows.
type Source struct {
	// Kind is the kind's name: bookmarks carry it, logs name it, and a
	// Caches keeps one cache per name.
	Kind string
	// Prefix is the key prefix of every object of the kind. A namespaced
	// kind's keys are Prefix + namespace + "/" + name.
	Prefix string
	// Namespaced tells whether keys carry a namespace segment.
	Namespaced bool
	// Decode turns a stored value into an object whose resourceVersion is
	// kv.ModRevision (decrypting it when needed). It is called concurrently,
	// from the cache's goroutine and from watches of their own; the objects
	// it returns are shared by every watcher and never modified. An error
	// fails only the watchers that would have seen that object.
	Decode func(kv *store.KV) (*api.Object, error)
}

// Options configures the caches of a Caches.
type Options struct {
	// BookmarkInterval is how often watches ask the store for progress and
	// send a BOOKMARK; required (> 0).
	BookmarkInterval time.Duration
	// Capacity bounds the entries of each kind's ring; default
	// DefaultCapacity.
	Capacity int
	// MaxBytes bounds the memory of each kind's ring, approximately;
	// default DefaultMaxBytes.
	MaxBytes int64
	// WatcherBacklog bounds how many changes may wait for one watcher
	// (see the package doc); default DefaultWatcherBacklog.
	// WatcherBacklogBytes bounds their stored bytes; default
	// DefaultWatcherBacklogBytes. Below Capacity and a quarter of MaxBytes
	// (the ring also holds the encodings), as the defaults are, they keep
	// every event a watcher holds inside the ring.
	WatcherBacklog      int
	WatcherBacklogBytes int64
	// Logger receives the caches' warnings (an etcd watch that ended and is
	// restarted); default: discard them.
	Logger *slog.Logger
	// MapError turns a store failure into the error a watch ends with (the
	// registry's one mapping of store errors to API errors); default: an
	// InternalError.
	MapError func(error) error
	// StoreTimeout bounds how long an etcd watch may stay silent: one that
	// hears nothing from etcd for half of it asks for progress, and one
	// that then hears nothing for StoreTimeout more is dead (liveness.go):
	// its watchers end with ServiceUnavailable. Default
	// store.DefaultTimeout.
	StoreTimeout time.Duration
}

// Caches are the running caches of a registry, one per kind. It is safe
// for concurrent use.
type Caches struct {
	store  *store.Store
	opts   Options
	ctx    context.Context // ends every cache
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	caches map[string]*Cache // by kind name
	wg     sync.WaitGroup    // the caches' goroutines
}

// New returns the (not yet running) caches over s. Call Close when done.
func New(s *store.Store, opts Options) *Caches {
	if opts.Capacity <= 0 {
		opts.Capacity = DefaultCapacity
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.WatcherBacklog <= 0 {
		opts.WatcherBacklog = DefaultWatcherBacklog
	}
	if opts.WatcherBacklogBytes <= 0 {
		opts.WatcherBacklogBytes = DefaultWatcherBacklogBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MapError == nil {
		opts.MapError = func(err error) error { return api.NewInternal(err) }
	}
	if opts.StoreTimeout <= 0 {
		opts.StoreTimeout = store.DefaultTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Caches{store: s, opts: opts, ctx: ctx, cancel: cancel, caches: map[string]*Cache{}}
}

// Cache returns the running cache of src.Kind, starting it when there is
// none: from revision from (its window then begins there, and the store
// replays the changes after it; from must not be compacted), or, with from
// 0, from the store's current revision, read with ctx. It blocks only on
// that read, and holds no lock meanwhile, so a slow store holds up only
// the watches that wait for it. Errors: ServiceUnavailable after Close,
// and the store's error, mapped (Options.MapError), when it does not
// answer.
func (cs *Caches) Cache(ctx context.Context, src Source, from int64) (*Cache, error) {
	if c, err := cs.running(src.Kind); c != nil || err != nil {
		return c, err
	}
	rev := from
	if rev == 0 {
		var err error
		if rev, err = cs.store.Revision(ctx); err != nil {
			return nil, cs.opts.MapError(err)
		}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return nil, errClosed()
	}
	if c := cs.caches[src.Kind]; c != nil {
		return c, nil // started meanwhile: its Watch checks its window
	}
	c := &Cache{src: src, store: cs.store, opts: cs.opts, ring: make([]*entry, cs.opts.Capacity),
		since: rev, rev: rev, notify: make(chan struct{}), latest: map[string]*entry{}}
	cs.caches[src.Kind] = c
	cs.wg.Add(1)
	go func() {
		defer cs.wg.Done()
		c.run(cs.ctx)
		cs.mu.Lock()
		if cs.caches[src.Kind] == c {
			delete(cs.caches, src.Kind)
		}
		cs.mu.Unlock()
	}()
	return c, nil
}

// running returns the running cache of kind, nil when there is none, and
// ServiceUnavailable after Close.
func (cs *Caches) running(kind string) (*Cache, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closed {
		return nil, errClosed()
	}
	return cs.caches[kind], nil
}

// Close stops the caches and waits for their goroutines. Watchers served
// from a cache deliver what it had and then end with ServiceUnavailable;
// watches of their own on the store are not affected (they end with their
// context). Cache fails with ServiceUnavailable after Close. Call it before
// closing the store; it is idempotent and safe for concurrent use.
func (cs *Caches) Close() {
	cs.mu.Lock()
	cs.closed = true
	cs.cancel()
	cs.mu.Unlock()
	cs.wg.Wait()
}

func errClosed() error { return api.NewStatus(api.ReasonUnavailable, "the registry is closed") }

// Cache is the shared watch of one kind.
type Cache struct {
	src   Source
	store *store.Store
	opts  Options

	mu     sync.RWMutex
	ring   []*entry      // entry seq lives at ring[seq%len(ring)]; the other slots are nil
	first  uint64        // seq of the oldest entry
	head   uint64        // seq of the next entry
	since  int64         // every change after since is in the ring
	rev    int64         // every change up to rev has been seen
	err    error         // set when the cache has stopped: watchers end with it
	notify chan struct{} // closed (and replaced) when entries arrive or the cache stops

	// bytes approximates the memory the ring holds: its entries' sizes
	// (changed under mu) plus the encodings made of them (added by
	// watchers as they make them).
	bytes atomic.Int64
	// appended is the sum of the sizes of every entry appended so far;
	// entry.before is its value before each entry, so that the bytes
	// between two entries are a difference.
	appended int64
	// latest maps a key to the entry of its latest put while that entry
	// is in the ring (or about to enter it): see latest.go. run (and drop,
	// which run calls) alone writes it, under lmu.
	lmu    sync.Mutex
	latest map[string]*entry
}

// maxBatch bounds how many store events the cache appends under one lock,
// and how many entries a watcher copies out at a time.
const maxBatch = 256

// run follows the store from c.rev until ctx is done or the etcd watch
// fails for good. A failed etcd watch is restarted from c.rev+1, so
// watchers see nothing of it, unless that revision is compacted (watchers
// then end with Gone), the store's client is closed, or etcd stays silent
// for longer than the store timeout allows (liveness.go: watchers then end
// with ServiceUnavailable, and the next Watch starts a new cache).
func (c *Cache) run(ctx context.Context) {
	tick := time.NewTicker(c.opts.BookmarkInterval)
	defer tick.Stop()
	live := newLiveness(c.opts.StoreTimeout, time.Now())
	probe := time.NewTicker(live.interval())
	defer probe.Stop()
	var marked time.Time // when a progress notification last became a bookmark
	sw := c.store.Watch(ctx, c.src.Prefix, c.rev+1)
	defer func() { sw.Close() }()
	backoff := 50 * time.Millisecond
	batch := make([]*entry, 0, maxBatch)
	for {
		select {
		case <-ctx.Done():
			c.closing()
			return
		case <-tick.C:
			_ = sw.RequestProgress(ctx) // failures surface on the event stream
		case now := <-probe.C:
			ask, dead := live.check(now)
			if dead {
				c.silent()
				return
			}
			if ask {
				_ = sw.RequestProgress(ctx)
			}
		case ev, ok := <-sw.Events():
			if !ok {
				next, ok := c.rewatch(ctx, sw, &live, &backoff)
				if !ok {
					return
				}
				sw = next
				continue
			}
			backoff = 50 * time.Millisecond
			now := time.Now()
			live.hear(now)
			batch = c.collect(sw, ev, now, &marked, batch[:0])
			if len(batch) > 0 {
				c.append(batch)
				clear(batch)
			}
		}
	}
}

// append adds entries to the ring, dropping the oldest beyond either
// bound, and wakes the watchers.
func (c *Cache) append(batch []*entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := uint64(len(c.ring))
	for _, e := range batch {
		if c.head-c.first == n {
			c.drop()
		}
		e.cache(&c.bytes)
		e.before = c.appended
		c.appended += e.size
		c.ring[c.head%n] = e
		c.head++
		c.rev = max(c.rev, e.rev)
		c.bytes.Add(e.size)
		for c.head-c.first > 1 && c.bytes.Load() > c.opts.MaxBytes {
			c.drop()
		}
	}
	close(c.notify)
	c.notify = make(chan struct{})
}

// drop removes the oldest entry from the ring. Call with mu held.
func (c *Cache) drop() {
	i := c.first % uint64(len(c.ring))
	old := c.ring[i]
	c.ring[i] = nil
	c.first++
	c.since = max(c.since, old.rev)
	c.bytes.Add(-old.size)
	old.uncache()
	c.forgetLatest(old)
}

// stop ends the cache: watchers deliver what the ring holds for them and
// then end with err.
func (c *Cache) stop(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
	close(c.notify)
	c.notify = make(chan struct{})
}

// subscribe returns the seq of the first entry after revision n, or false
// when the ring no longer holds every change after n (or the cache has
// stopped): the caller then watches the store directly.
func (c *Cache) subscribe(n int64) (uint64, bool) {
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

// mark is a position in the ring: an entry's seq and the bytes appended
// to the ring before it.
type mark struct {
	seq    uint64
	before int64
}

func (c *Cache) at(seq uint64) *entry { return c.ring[seq%uint64(len(c.ring))] }

// view is what a watcher learns of the ring when it reads it.
type view struct {
	notify  <-chan struct{} // closed when more entries arrive or the cache stops
	err     error           // the cache's error once it has stopped
	evicted bool            // the entry asked for has been dropped
	head    mark            // the position after the newest entry
}

// read copies the entries from seq next on (at most maxBatch) into buf,
// and tells where the ring stands.
func (c *Cache) read(next uint64, buf []*entry) ([]*entry, view) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v := view{notify: c.notify, err: c.err, head: mark{seq: c.head, before: c.appended}}
	if next < c.first {
		v.evicted = true
		return buf, v
	}
	for s := next; s < c.head && len(buf) < maxBatch; s++ {
		buf = append(buf, c.at(s))
	}
	return buf, v
}

// progress tells where the ring stands, for a watcher that waits.
func (c *Cache) progress() view {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return view{notify: c.notify, err: c.err, head: mark{seq: c.head, before: c.appended}}
}

func formatRV(rev int64) string { return strconv.FormatInt(rev, 10) }

// Package informer keeps an in-memory copy of the objects of one kind,
// current through list + watch, and tells handlers about every change.
//
// An Informer lists the objects, then watches from the list's
// resourceVersion. When the watch drops it resumes from the last
// resourceVersion it saw (BOOKMARK events advance it), with backoff, so no
// change is lost or delivered twice. When that version has been compacted
// away (410 Gone) it lists again and reconciles its cache with the list:
// objects that vanished are delivered as deletions, changed ones as updates,
// new ones as additions. Every ResyncPeriod it re-delivers every cached
// object as an update with old == new, so level-based controllers get to
// look at everything again.
//
// Named indexes (AddIndex, ByIndex) find cached objects by a computed value,
// such as the dependents of an owner, without scanning the cache. A Factory
// shares one informer per kind among every controller of a process.
package informer

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// Handler receives the changes an informer sees. Nil functions are skipped.
//
// Calls are serialized: for one informer, handlers are called one at a time,
// in the order the changes happened, from the goroutine running Run (or from
// AddEventHandler for a late handler). They must be quick, typically adding
// a key to a work queue, because the informer waits for them. A handler may
// read the informer's cache (it already holds the change) but must not call
// AddEventHandler.
//
// The objects passed are shared with the cache and with other handlers:
// never modify them; DeepCopy first.
type Handler struct {
	// OnAdd is called for an object that appeared: created, seen in the
	// first list, or listed again after it was missed.
	OnAdd func(obj *api.Object)
	// OnUpdate is called for a change of an object, and on every resync
	// with old == new.
	OnUpdate func(old, new *api.Object)
	// OnDelete is called for an object that is gone, with its last known
	// state.
	OnDelete func(obj *api.Object)
}

func (h *Handler) add(o *api.Object) {
	if h.OnAdd != nil {
		h.OnAdd(o)
	}
}

func (h *Handler) update(old, new *api.Object) {
	if h.OnUpdate != nil {
		h.OnUpdate(old, new)
	}
}

func (h *Handler) delete(o *api.Object) {
	if h.OnDelete != nil {
		h.OnDelete(o)
	}
}

// Options configures an Informer. The zero value is usable.
type Options struct {
	// LabelSelector limits the informer to matching objects; an object that
	// stops matching is delivered as deleted.
	LabelSelector string
	// ResyncPeriod, when positive, re-delivers every cached object through
	// OnUpdate(obj, obj) this often. Zero means never.
	ResyncPeriod time.Duration
	// PageSize is the limit of the first page of a list; default 500.
	// Each next page's limit doubles, up to maxPageGrowth times PageSize:
	// a short list costs a small page, and a long one few pages (the
	// store counts every key left at each page).
	PageSize int64
	// MinBackoff and MaxBackoff bound the wait before retrying a failed list
	// or watch; defaults 100ms and 30s. The wait doubles with each failure
	// in a row, with jitter.
	MinBackoff, MaxBackoff time.Duration
	// Logger receives list and watch failures; default slog.Default().
	Logger *slog.Logger
}

// Informer caches the objects of one kind in one namespace (or all). Build
// it with New (or get the shared one of a kind from a Factory), register
// handlers and indexes, then Run it. Its methods are safe for concurrent
// use.
//
// The cache, indexes and handlers live in the informer's core, which every
// view of it shares: a Factory's scoped view (Factory.Scope) hands out the
// same informer with handlers that its Shutdown removes.
type Informer struct {
	*core
	// scope, for a view, owns the handlers registered through it.
	scope *scope
}

// core is the state of an informer, shared by its views.
type core struct {
	c    client.Interface
	kind string
	ns   string
	opts Options
	log  *slog.Logger

	// hmu serializes every change of the cache together with its handler
	// calls, and handler registration, so each handler sees each change
	// exactly once and in order.
	hmu      sync.Mutex
	handlers []registered

	mu      sync.RWMutex
	items   map[string]*api.Object // by api.Key(namespace, name)
	indexes map[string]*index      // by name; kept current with items
	rv      string                 // last resourceVersion applied

	synced   chan struct{}
	syncOnce sync.Once
	started  atomic.Bool
}

// registered is a handler and the scope it was registered through (nil:
// none, it lives as long as the informer).
type registered struct {
	Handler
	scope *scope
}

// New returns an informer for kind in namespace ns ("" for every namespace)
// over c. It does nothing until Run.
func New(c client.Interface, kind, ns string, opts Options) *Informer {
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(30*time.Second, opts.MinBackoff)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Informer{core: &core{
		c: c, kind: kind, ns: ns, opts: opts,
		log:     opts.Logger.With("informer", kind, "namespace", ns),
		items:   map[string]*api.Object{},
		indexes: map[string]*index{},
		synced:  make(chan struct{}),
	}}
}

// Kind returns the kind the informer watches.
func (i *core) Kind() string { return i.kind }

// AddEventHandler registers h. A handler added after the first list has
// been delivered receives OnAdd for every cached object first, so it misses
// nothing. It blocks while a change is being delivered to other handlers.
// Through a view of a Factory (Factory.Scope), h stays registered until
// the view's Shutdown; through a view already shut down it is not
// registered at all.
func (i *Informer) AddEventHandler(h Handler) {
	if i.scope == nil {
		i.core.addHandler(registered{Handler: h})
		return
	}
	i.scope.register(i.core, h)
}

// addHandler registers r and replays the cache to it (see AddEventHandler).
func (i *core) addHandler(r registered) {
	i.hmu.Lock()
	defer i.hmu.Unlock()
	i.handlers = append(i.handlers, r)
	if i.HasSynced() {
		for _, o := range i.List() {
			r.add(o)
		}
	}
}

// removeScope unregisters every handler registered through sc. It blocks
// while a change is being delivered: once it returns, none of them runs.
func (i *core) removeScope(sc *scope) {
	i.hmu.Lock()
	defer i.hmu.Unlock()
	i.handlers = slices.DeleteFunc(i.handlers, func(r registered) bool { return r.scope == sc })
}

// HasSynced reports whether the first list has been stored and delivered
// to the handlers. It never blocks.
func (i *core) HasSynced() bool {
	select {
	case <-i.synced:
		return true
	default:
		return false
	}
}

// WaitForSync blocks until the first list has been delivered (true) or ctx
// is done (false).
func (i *core) WaitForSync(ctx context.Context) bool {
	select {
	case <-i.synced:
		return true
	case <-ctx.Done():
		return false
	}
}

// Get returns the cached object namespace/name (namespace "" for
// cluster-scoped kinds). The object is shared: DeepCopy before modifying
// it. It never blocks on the network.
func (i *core) Get(namespace, name string) (*api.Object, bool) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	o, ok := i.items[api.Key(namespace, name)]
	return o, ok
}

// List returns every cached object, sorted by namespace and name. The
// objects are shared: DeepCopy before modifying one. It copies the whole
// cache: to find some objects, use an index (ByIndex).
func (i *core) List() []*api.Object {
	i.mu.RLock()
	out := make([]*api.Object, 0, len(i.items))
	for _, o := range i.items {
		out = append(out, o)
	}
	i.mu.RUnlock()
	sortObjects(out)
	return out
}

// Len returns the number of cached objects. It never blocks on the network
// and costs O(1).
func (i *core) Len() int {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return len(i.items)
}

// sortObjects sorts objects by namespace and name.
func sortObjects(s []*api.Object) {
	sort.Slice(s, func(a, b int) bool { return api.Key(s[a].Namespace, s[a].Name) < api.Key(s[b].Namespace, s[b].Name) })
}

// ResourceVersion returns the resourceVersion up to which the cache is
// current ("" before the first list).
func (i *core) ResourceVersion() string {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.rv
}

// Run lists, watches and delivers changes until ctx is done; it then stops
// its watch and returns. Failures are logged and retried with backoff; they
// never end Run. An informer runs once: a second call returns at once.
func (i *core) Run(ctx context.Context) {
	if !i.started.CompareAndSwap(false, true) {
		i.log.Error("informer: Run called twice; ignoring")
		return
	}
	var resync <-chan time.Time
	if i.opts.ResyncPeriod > 0 {
		t := time.NewTicker(i.opts.ResyncPeriod)
		defer t.Stop()
		resync = t.C
	}
	b := backoff{min: i.opts.MinBackoff, max: i.opts.MaxBackoff}
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			listed, err := i.relist(ctx)
			if err != nil {
				if ctx.Err() == nil {
					i.log.Warn("list failed; retrying", "err", err)
				}
				b.wait(ctx)
				continue
			}
			rv = listed
		}
		var progressed bool
		var err error
		rv, progressed, err = i.watch(ctx, rv, resync)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, api.ErrExpired):
			i.log.Info("watch resourceVersion compacted; listing again", "resourceVersion", rv)
			rv = ""
			continue
		case progressed:
			b.reset()
		}
		i.log.Debug("watch ended; resuming", "resourceVersion", rv, "err", err)
		b.wait(ctx)
	}
}

// maxPageGrowth bounds a list's page limit: PageSize times this.
const maxPageGrowth = 16

// relist reads every object (page by page, at one revision, each page's
// limit twice the one before, up to maxPageGrowth times the first) and
// replaces the cache with them. It returns the list's resourceVersion.
func (i *core) relist(ctx context.Context) (string, error) {
	items := map[string]*api.Object{}
	opts := api.ListOptions{LabelSelector: i.opts.LabelSelector, Limit: i.opts.PageSize}
	rv := ""
	for {
		l, err := i.c.List(ctx, i.kind, i.ns, opts)
		if err != nil {
			return "", err
		}
		if rv == "" {
			rv = l.ResourceVersion
		}
		for _, o := range l.Items {
			items[api.Key(o.Namespace, o.Name)] = o
		}
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
		opts.Limit = min(2*opts.Limit, maxPageGrowth*i.opts.PageSize)
	}
	i.replace(items, rv)
	return rv, nil
}

// replace swaps the cache for items and delivers the difference: deletions
// of objects that vanished (or were replaced by a new incarnation), then
// additions and updates, in key order. Unchanged objects are not delivered,
// and their index entries stay as they are (an index is a function of the
// object, and the object has not changed).
func (i *core) replace(items map[string]*api.Object, rv string) {
	i.hmu.Lock()
	defer i.hmu.Unlock()
	// Only holders of hmu write i.items, so it can be read here without mu.
	old := i.items

	// Each change keeps its key, which orders the deliveries.
	type change struct {
		key       string
		prev, cur *api.Object
	}
	var deleted, added, updated []change
	for k, prev := range old {
		cur, ok := items[k]
		if !ok || cur.UID != prev.UID {
			deleted = append(deleted, change{key: k, prev: prev})
		}
	}
	for k, cur := range items {
		prev, ok := old[k]
		switch {
		case !ok || prev.UID != cur.UID:
			added = append(added, change{key: k, cur: cur})
		case prev.ResourceVersion != cur.ResourceVersion:
			updated = append(updated, change{key: k, prev: prev, cur: cur})
		}
	}

	i.mu.Lock()
	i.items, i.rv = items, rv
	for _, c := range deleted {
		if items[c.key] == nil {
			i.reindex(c.key, nil)
		}
	}
	for _, c := range added {
		i.reindex(c.key, c.cur)
	}
	for _, c := range updated {
		i.reindex(c.key, c.cur)
	}
	i.mu.Unlock()

	byKey := func(a, b change) int { return strings.Compare(a.key, b.key) }
	slices.SortFunc(deleted, byKey)
	slices.SortFunc(added, byKey)
	slices.SortFunc(updated, byKey)
	for _, h := range i.handlers {
		for _, c := range deleted {
			h.delete(c.prev)
		}
		for _, c := range added {
			h.add(c.cur)
		}
		for _, c := range updated {
			h.update(c.prev, c.cur)
		}
	}
	i.syncOnce.Do(func() { close(i.synced) })
}

// watch streams changes from rv until the watch ends or ctx is done, and
// returns the last resourceVersion seen, whether any event arrived, and why
// the watch ended. Resync ticks are handled here, between events.
func (i *core) watch(ctx context.Context, rv string, resync <-chan time.Time) (string, bool, error) {
	w, err := i.c.Watch(ctx, i.kind, i.ns, api.ListOptions{LabelSelector: i.opts.LabelSelector, ResourceVersion: rv})
	if err != nil {
		return rv, false, err
	}
	defer w.Stop()
	progressed := false
	for {
		select {
		case <-ctx.Done():
			return rv, progressed, ctx.Err()
		case <-resync:
			i.resync()
		case ev, ok := <-w.Events():
			if !ok {
				err := w.Err()
				if err == nil {
					err = errors.New("informer: watch ended")
				}
				return rv, progressed, err
			}
			progressed = true
			if ev.Object == nil {
				continue
			}
			i.apply(ev)
			if ev.Object.ResourceVersion != "" {
				rv = ev.Object.ResourceVersion
			}
		}
	}
}

// apply stores one watch event and delivers it. Events that are not newer
// than the cached object (a replay after a reconnect) are dropped, so no
// handler sees a change twice.
func (i *core) apply(ev api.ObjectEvent) {
	obj := ev.Object
	key := api.Key(obj.Namespace, obj.Name)
	i.hmu.Lock()
	defer i.hmu.Unlock()
	i.mu.Lock()
	prev, had := i.items[key]
	if obj.ResourceVersion != "" {
		i.rv = obj.ResourceVersion
	}
	switch ev.Type {
	case api.Added, api.Modified:
		if had && !newer(obj.ResourceVersion, prev.ResourceVersion) {
			i.mu.Unlock()
			return
		}
		i.items[key] = obj
		i.reindex(key, obj)
		i.mu.Unlock()
		for _, h := range i.handlers {
			if had {
				h.update(prev, obj)
			} else {
				h.add(obj)
			}
		}
	case api.Deleted:
		if !had || !newer(obj.ResourceVersion, prev.ResourceVersion) {
			i.mu.Unlock()
			return
		}
		delete(i.items, key)
		i.reindex(key, nil)
		i.mu.Unlock()
		for _, h := range i.handlers {
			h.delete(obj)
		}
	case api.Bookmark:
		i.mu.Unlock()
	default:
		i.mu.Unlock()
		i.log.Warn("ignoring watch event of unknown type", "type", ev.Type)
	}
}

// resync re-delivers every cached object as an update with old == new.
func (i *core) resync() {
	i.hmu.Lock()
	defer i.hmu.Unlock()
	for _, o := range i.List() {
		for _, h := range i.handlers {
			h.update(o, o)
		}
	}
}

// newer reports whether resourceVersion a is after b. Versions are opaque
// to clients, but cairn's are decimal store revisions; when either does not
// parse, any difference counts as newer.
func newer(a, b string) bool {
	x, errA := strconv.ParseInt(a, 10, 64)
	y, errB := strconv.ParseInt(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return x > y
}

// backoff is a capped exponential backoff with jitter.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) reset() { b.cur = 0 }

// wait sleeps for the next backoff period or until ctx is done.
func (b *backoff) wait(ctx context.Context) {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	d := b.cur/2 + rand.N(b.cur/2+1) // jitter: [cur/2, cur]
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

package watchcache

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// Initial is the list a watch from no version sends first, as ADDED
// events. It is read as it is sent, so that it is never held whole.
type Initial interface {
	// Next returns the next object, or io.EOF after the last. It may block
	// on a store read, bounded by ctx. Any other error ends the watch with
	// it, as it is (an *api.Status, preferably).
	Next(ctx context.Context) (*api.Object, error)
}

// Request is what a watch asks for.
type Request struct {
	// NS is the namespace watched: "" for every namespace (and always for
	// a cluster-scoped kind).
	NS string
	// Sel selects the objects whose changes are sent.
	Sel Selection
	// RV is the revision after which changes are sent.
	RV int64
	// Initial, when not nil, is sent first, as ADDED.
	Initial Initial
	// EndInitial marks the end of the initial objects with a BOOKMARK at
	// RV annotated api.InitialEventsEndAnnotation.
	EndInitial bool
}

// Watch starts a watch of the cache's kind in namespace req.NS that first
// sends the objects of req.Initial (when not nil) as ADDED (and, with
// EndInitial, a BOOKMARK saying they ended), then every change after
// revision req.RV visible through req.Sel, in revision order, each once,
// with a BOOKMARK whenever the store reports progress. A change whose
// object stops matching the selection is sent as DELETED with its latest
// state; one that starts matching, as ADDED.
//
// It does not block. The watch is served from the ring when the ring holds
// every change after RV, else by an etcd watch of its own from RV+1; RV
// must not be compacted (the caller checks). The objects sent are shared:
// never modify them. Events read from the ring carry Raw.
//
// The stream ends when ctx is done or on Stop (Err is then nil), or on a
// failure, which Err tells: Gone after a compaction, TooManyRequests when
// the watcher fell too far behind (a whole ring, or more than
// Options.WatcherBacklog changes or Options.WatcherBacklogBytes bytes
// waiting for it: watch again from the last resourceVersion received),
// ServiceUnavailable when the caches close or the store's client does,
// InternalError when a stored object does not decode, or initial's error.
func (c *Cache) Watch(ctx context.Context, req Request) api.Watcher {
	ns := req.NS
	if !c.src.Namespaced {
		ns = ""
	}
	wctx, cancel := context.WithCancel(ctx)
	var end *api.Object
	if req.EndInitial {
		end = initialEnd(&c.src, req.RV)
	}
	if next, ok := c.subscribe(req.RV); ok {
		w := &cacheWatcher{c: c, ns: ns, sel: req.Sel, start: req.RV, stream: newStream(cancel, end)}
		go w.run(wctx, next, req.Initial)
		return w
	}
	w := &directWatcher{src: &c.src, sel: req.Sel, interval: c.opts.BookmarkInterval, mapErr: c.opts.MapError,
		opts: &c.opts, stream: newStream(cancel, end)}
	sw := c.store.Watch(wctx, c.keyPrefix(ns), req.RV+1)
	go w.run(wctx, req.Initial, sw)
	return w
}

// initialEnd is the BOOKMARK that ends a watch's initial objects, at rv.
func initialEnd(src *Source, rv int64) *api.Object {
	bm := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: src.Kind}}
	bm.ResourceVersion = formatRV(rv)
	bm.Annotations = map[string]string{api.InitialEventsEndAnnotation: "true"}
	return bm
}

// keyPrefix is the prefix of the kind's keys in namespace ns ("" for all).
func (c *Cache) keyPrefix(ns string) string {
	if ns == "" {
		return c.src.Prefix
	}
	return c.src.Prefix + ns + "/"
}

// Shared reports whether w reads a cache's ring (rather than an etcd
// watch of its own).
func Shared(w api.Watcher) bool {
	_, ok := w.(*cacheWatcher)
	return ok
}

// chanCap is the capacity of a watcher's channel.
const chanCap = 64

// stream is the part of api.Watcher that both kinds of watcher share.
type stream struct {
	events chan api.ObjectEvent
	// end, when set, is sent once the initial objects are (initialEnd).
	end    *api.Object
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	err    error // set before done is closed
}

func newStream(cancel context.CancelFunc, end *api.Object) stream {
	return stream{events: make(chan api.ObjectEvent, chanCap), cancel: cancel, done: make(chan struct{}), end: end}
}

// Events implements api.Watcher.
func (s *stream) Events() <-chan api.ObjectEvent { return s.events }

// Err implements api.Watcher: it blocks until the stream is closed.
func (s *stream) Err() error {
	<-s.done
	return s.err
}

// Stop implements api.Watcher; it waits for the watcher's goroutine to end.
func (s *stream) Stop() {
	s.once.Do(s.cancel)
	<-s.done
}

// nextInitial reads the next object of initial: ok is false at its end
// (or when initial is nil); a failure is set as the stream's error, unless
// ctx ended.
func (s *stream) nextInitial(ctx context.Context, initial Initial) (obj *api.Object, ok bool, err error) {
	if initial == nil {
		return nil, false, nil
	}
	obj, err = initial.Next(ctx)
	switch {
	case errors.Is(err, io.EOF):
		return nil, false, nil
	case err != nil && ctx.Err() != nil:
		return nil, false, ctx.Err()
	case err != nil:
		s.err = err
		return nil, false, err
	}
	return obj, true, nil
}

// stalled is the error of a watcher ended because its consumer took
// nothing while too many changes arrived.
func stalled(events uint64, bytes int64, maxEvents int, maxBytes int64) error {
	return api.NewStatus(api.ReasonTooManyRequests,
		"the watch fell too far behind and was ended: its client took no event while %d changes (about %d bytes) arrived, more than the %d changes or %d bytes a watcher may fall behind; watch again from the last resourceVersion received",
		events, bytes, maxEvents, maxBytes)
}

// ringBehind is the error of a watcher whose next change has left the
// ring (or, for a watch of its own, whose queue outgrew the ring's bounds).
func ringBehind(capacity int, maxBytes int64) error {
	return api.NewStatus(api.ReasonTooManyRequests,
		"the watch fell behind more changes than the watch cache keeps (at most %d changes, about %d bytes) and was ended: watch again from the last resourceVersion received",
		capacity, maxBytes)
}

// cacheWatcher is a watch served from a kind's cache. Its goroutine reads
// the ring from its own position, filters and sends; the objects it sends
// are the cache's, shared with every other watcher.
//
// Its backlog is what arrived in the ring since it sent the oldest event
// still in its channel: the client has taken nothing meanwhile. log keeps
// the last chanCap sends, so the oldest one still in the channel is the
// len(events)-th last.
type cacheWatcher struct {
	stream
	c     *Cache
	ns    string // "" for every namespace
	sel   Selection
	start int64 // changes up to start are not sent (the watch's resourceVersion)

	log   [chanCap]mark // the ring's head at each of the last sends, by send count modulo chanCap
	nsent uint64
}

func (w *cacheWatcher) run(ctx context.Context, next uint64, initial Initial) {
	defer close(w.done)
	defer close(w.events)
	defer w.cancel()
	v := w.c.progress()
	for {
		obj, ok, err := w.nextInitial(ctx, initial)
		if err != nil {
			return
		}
		if !ok {
			break
		}
		if v, ok = w.deliver(ctx, api.ObjectEvent{Type: api.Added, Object: obj}, v); !ok {
			return
		}
	}
	if w.end != nil {
		var ok bool
		if v, ok = w.deliver(ctx, api.ObjectEvent{Type: api.Bookmark, Object: w.end}, v); !ok {
			return
		}
	}
	last := w.start // the version of the last change or bookmark sent
	buf := make([]*entry, 0, maxBatch)
	for {
		buf, v = w.c.read(next, buf[:0])
		if v.evicted {
			w.err = ringBehind(w.c.opts.Capacity, w.c.opts.MaxBytes)
			return
		}
		if w.behind(v) {
			return
		}
		if len(buf) == 0 {
			if v.err != nil {
				w.err = v.err
				return
			}
			select {
			case <-v.notify:
				continue
			case <-ctx.Done():
				return
			}
		}
		next += uint64(len(buf))
		for _, e := range buf {
			var ok bool
			switch {
			case e.bookmark != nil:
				if e.rev < last {
					continue
				}
				last = e.rev
				if v, ok = w.deliver(ctx, api.ObjectEvent{Type: api.Bookmark, Object: e.bookmark}, v); !ok {
					return
				}
				continue
			case e.rev <= w.start, w.ns != "" && e.ns != w.ns:
				continue
			case e.err != nil:
				w.err = w.c.opts.MapError(e.err)
				return
			}
			if ev, visible := e.event(w.sel); visible {
				last = e.rev
				if v, ok = w.deliver(ctx, e.withRaw(ev), v); !ok {
					return
				}
			}
		}
		clear(buf)
	}
}

// deliver sends ev once the channel has room. v is the ring as last seen;
// deliver returns it as it last saw it. While the channel is full it
// waits, checking its backlog at every change the ring receives; it
// returns false when the watch must end (ctx done, or too far behind:
// w.err is then set).
func (w *cacheWatcher) deliver(ctx context.Context, ev api.ObjectEvent, v view) (view, bool) {
	for {
		select {
		case w.events <- ev:
			w.log[w.nsent%chanCap] = v.head
			w.nsent++
			return v, true
		default:
		}
		v = w.c.progress()
		if w.behind(v) {
			return v, false
		}
		select {
		case w.events <- ev:
			w.log[w.nsent%chanCap] = v.head
			w.nsent++
			return v, true
		case <-v.notify:
		case <-ctx.Done():
			return v, false
		}
	}
}

// behind reports (and sets w.err) when the watch must end because its
// client is too far behind: more than the bounds arrived since the oldest
// event still in its channel was sent.
func (w *cacheWatcher) behind(v view) bool {
	n := uint64(len(w.events))
	if n == 0 {
		return false
	}
	oldest := w.log[(w.nsent-n)%chanCap]
	events, bytes := v.head.seq-oldest.seq, v.head.before-oldest.before
	if events <= uint64(w.c.opts.WatcherBacklog) && bytes <= w.c.opts.WatcherBacklogBytes {
		return false
	}
	w.err = stalled(events, bytes, w.c.opts.WatcherBacklog, w.c.opts.WatcherBacklogBytes)
	return true
}

// directWatcher is a watch served by an etcd watch of its own: for
// versions older than the cache's window. It always reads the etcd watch,
// so that the etcd client never buffers for it, and queues what its
// client has not taken yet. It ends when the client took nothing while
// more than the backlog bounds arrived (as a cache watcher), and when its
// queue outgrows the ring's bounds or the backlog bounds, whichever are
// larger (a replay faster than the client reads it: the client resumes
// from where it got to).
type directWatcher struct {
	stream
	src      *Source
	sel      Selection
	interval time.Duration // between progress requests
	mapErr   func(error) error
	opts     *Options

	queue  []queued // changes read, not yet sent
	qbytes int64
	read   mark          // how many changes (and bytes) were read from etcd so far
	log    [chanCap]mark // read as it stood at each of the last sends, by send count modulo chanCap
	nsent  uint64
}

// queued is an event waiting to be sent, with the size of its entry.
type queued struct {
	ev   api.ObjectEvent
	size int64
}

// run serves the watch until ctx ends, its client falls behind, or the
// etcd watch sw fails or goes silent (w.err then tells why): first the
// initial list (and its end bookmark, w.end), then the changes sw reads,
// queued until the client takes them. It closes sw, the events channel
// and done when it returns.
func (w *directWatcher) run(ctx context.Context, initial Initial, sw *store.Watch) {
	defer close(w.done)
	defer close(w.events)
	defer w.cancel()
	defer sw.Close()
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	live := newLiveness(w.opts.StoreTimeout, time.Now())
	probe := time.NewTicker(live.interval())
	defer probe.Stop()
	var marked time.Time       // when a progress notification last became a bookmark
	var first *api.ObjectEvent // the next initial object, sent before any change
	for {
		if first == nil && initial != nil {
			var err error
			if first, initial, err = w.nextFirst(ctx, initial); err != nil {
				return
			}
		}
		var out chan<- api.ObjectEvent
		var next queued
		switch {
		case first != nil:
			out, next = w.events, queued{ev: *first}
		case len(w.queue) > 0:
			out, next = w.events, w.queue[0]
		}
		select {
		case <-ctx.Done():
			return
		case out <- next.ev:
			w.log[w.nsent%chanCap] = w.read
			w.nsent++
			if first != nil {
				first = nil
				continue
			}
			w.queue[0] = queued{}
			w.queue = w.queue[1:]
			w.qbytes -= next.size
		case <-tick.C:
			if err := sw.RequestProgress(ctx); err != nil && ctx.Err() == nil {
				w.err = w.mapErr(err)
				return
			}
		case now := <-probe.C:
			ask, dead := live.check(now)
			if dead {
				w.err = errStoreSilent(w.opts.StoreTimeout)
				return
			}
			if ask {
				_ = sw.RequestProgress(ctx) // failures surface on the event stream
			}
		case ev, ok := <-sw.Events():
			if !ok {
				if err := sw.Err(); err != nil && ctx.Err() == nil {
					w.err = w.mapErr(err)
				}
				return
			}
			now := time.Now()
			live.hear(now)
			if !w.receive(ev, now, &marked) {
				return
			}
		}
	}
}

func (w *directWatcher) enqueue(ev api.ObjectEvent, size int64) {
	w.queue = append(w.queue, queued{ev: ev, size: size})
	w.qbytes += size
}

// behind reports (and sets w.err) when the watch must end: its client
// took nothing while more than the backlog bounds arrived, or its queue
// outgrew the ring's bounds.
func (w *directWatcher) behind() bool {
	maxEvents, maxBytes := max(w.opts.Capacity, w.opts.WatcherBacklog), max(w.opts.MaxBytes, w.opts.WatcherBacklogBytes)
	if len(w.queue) > maxEvents || w.qbytes > maxBytes {
		w.err = ringBehind(maxEvents, maxBytes)
		return true
	}
	n := uint64(len(w.events))
	if n == 0 {
		return false
	}
	oldest := w.log[(w.nsent-n)%chanCap]
	events, bytes := w.read.seq-oldest.seq, w.read.before-oldest.before
	if events <= uint64(w.opts.WatcherBacklog) && bytes <= w.opts.WatcherBacklogBytes {
		return false
	}
	w.err = stalled(events, bytes, w.opts.WatcherBacklog, w.opts.WatcherBacklogBytes)
	return true
}

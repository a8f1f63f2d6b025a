package watchcache

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// Watch starts a watch of the cache's kind in namespace ns (every
// namespace when ns is "", and always for a cluster-scoped kind) that first
// sends initial as ADDED, then every change after revision rv visible
// through sel, in revision order, each once, with a BOOKMARK whenever the
// store reports progress. A change whose object stops matching sel is sent
// as DELETED with its latest state; one that starts matching, as ADDED.
//
// It does not block. The watch is served from the ring when the ring holds
// every change after rv, else by an etcd watch of its own from rv+1; rv
// must not be compacted (the caller checks). The objects sent are shared:
// never modify them. Events read from the ring carry Raw.
//
// The stream ends when ctx is done or on Stop (Err is then nil), or on a
// failure, which Err tells: Gone after a compaction, TooManyRequests when
// the watcher fell a whole ring behind (watch again from the last
// resourceVersion received), ServiceUnavailable when the caches close or
// the store's client does, InternalError when a stored object does not
// decode.
func (c *Cache) Watch(ctx context.Context, ns string, sel labels.Selector, rv int64, initial []*api.Object) api.Watcher {
	if !c.src.Namespaced {
		ns = ""
	}
	wctx, cancel := context.WithCancel(ctx)
	if next, ok := c.subscribe(rv); ok {
		w := &cacheWatcher{c: c, ns: ns, sel: sel, start: rv, stream: newStream(cancel)}
		go w.run(wctx, next, initial)
		return w
	}
	w := &directWatcher{src: &c.src, sel: sel, interval: c.opts.BookmarkInterval, mapErr: c.opts.MapError, stream: newStream(cancel)}
	sw := c.store.Watch(wctx, c.keyPrefix(ns), rv+1)
	go w.run(wctx, initial, sw)
	return w
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

// stream is the part of api.Watcher that both kinds of watcher share.
type stream struct {
	events chan api.Event
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	err    error // set before done is closed
}

func newStream(cancel context.CancelFunc) stream {
	return stream{events: make(chan api.Event, 64), cancel: cancel, done: make(chan struct{})}
}

// Events implements api.Watcher.
func (s *stream) Events() <-chan api.Event { return s.events }

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

func (s *stream) send(ctx context.Context, ev api.Event) bool {
	select {
	case s.events <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// sendInitial sends the objects of the list that started the watch.
func (s *stream) sendInitial(ctx context.Context, initial []*api.Object) bool {
	for _, obj := range initial {
		if !s.send(ctx, api.Event{Type: api.Added, Object: obj}) {
			return false
		}
	}
	return true
}

// cacheWatcher is a watch served from a kind's cache. Its goroutine reads
// the ring from its own position, filters and sends; the objects it sends
// are the cache's, shared with every other watcher.
type cacheWatcher struct {
	stream
	c     *Cache
	ns    string // "" for every namespace
	sel   labels.Selector
	start int64 // changes up to start are not sent (the watch's resourceVersion)
}

func (w *cacheWatcher) run(ctx context.Context, next uint64, initial []*api.Object) {
	defer close(w.done)
	defer close(w.events)
	defer w.cancel()
	if !w.sendInitial(ctx, initial) {
		return
	}
	last := w.start // the version of the last change or bookmark sent
	buf := make([]*entry, 0, maxBatch)
	for {
		var notify <-chan struct{}
		var err error
		var evicted bool
		buf, notify, err, evicted = w.c.read(next, buf[:0])
		if evicted {
			w.err = api.NewStatus(api.ReasonTooManyRequests,
				"the watch fell behind more changes than the watch cache keeps (at most %d changes, about %d bytes) and was ended: watch again from the last resourceVersion received",
				w.c.opts.Capacity, w.c.opts.MaxBytes)
			return
		}
		if len(buf) == 0 {
			if err != nil {
				w.err = err
				return
			}
			select {
			case <-notify:
				continue
			case <-ctx.Done():
				return
			}
		}
		next += uint64(len(buf))
		for _, e := range buf {
			switch {
			case e.bookmark != nil:
				if e.rev < last {
					continue
				}
				last = e.rev
				if !w.send(ctx, api.Event{Type: api.Bookmark, Object: e.bookmark}) {
					return
				}
				continue
			case e.rev <= w.start, w.ns != "" && e.ns != w.ns:
				continue
			case e.err != nil:
				w.err = w.c.opts.MapError(e.err)
				return
			}
			if ev, ok := e.event(w.sel); ok {
				last = e.rev
				if !w.send(ctx, e.withRaw(ev)) {
					return
				}
			}
		}
		clear(buf)
	}
}

// directWatcher is a watch served by an etcd watch of its own: for
// versions older than the cache's window.
type directWatcher struct {
	stream
	src      *Source
	sel      labels.Selector
	interval time.Duration // between progress requests
	mapErr   func(error) error
}

func (w *directWatcher) run(ctx context.Context, initial []*api.Object, sw *store.Watch) {
	defer close(w.done)
	defer close(w.events)
	defer w.cancel()
	defer sw.Close()
	if !w.sendInitial(ctx, initial) {
		return
	}
	tick := time.NewTicker(w.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := sw.RequestProgress(ctx); err != nil && ctx.Err() == nil {
				w.err = w.mapErr(err)
				return
			}
		case ev, ok := <-sw.Events():
			if !ok {
				if err := sw.Err(); err != nil && ctx.Err() == nil {
					w.err = w.mapErr(err)
				}
				return
			}
			e := newEntry(w.src, ev)
			switch {
			case e.bookmark != nil:
				if !w.send(ctx, api.Event{Type: api.Bookmark, Object: e.bookmark}) {
					return
				}
				continue
			case e.err != nil:
				w.err = w.mapErr(e.err)
				return
			}
			if out, ok := e.event(w.sel); ok && !w.send(ctx, out) {
				return
			}
		}
	}
}

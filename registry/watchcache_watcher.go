package registry

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/labels"

	"cairn.dev/cairn/api"
)

// cacheWatcher is an API watch served from a kind's watch cache. Its
// goroutine reads the ring from its own position, filters and sends; the
// objects it sends are the cache's, shared with every other watcher.
type cacheWatcher struct {
	c      *watchCache
	ns     string // "" for every namespace
	sel    labels.Selector
	start  int64 // changes up to start are not sent (the watch's resourceVersion)
	events chan api.Event
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	err    error // set before done is closed
}

// watch starts a watcher that first sends initial as ADDED, then every
// entry from seq next on that is after revision start and visible through
// ns and sel.
func (c *watchCache) watch(ctx context.Context, ns string, sel labels.Selector, start int64, next uint64, initial []*api.Object) *cacheWatcher {
	wctx, cancel := context.WithCancel(ctx)
	w := &cacheWatcher{c: c, ns: ns, sel: sel, start: start, events: make(chan api.Event, 64),
		cancel: cancel, done: make(chan struct{})}
	go w.run(wctx, next, initial)
	return w
}

// Events implements api.Watcher.
func (w *cacheWatcher) Events() <-chan api.Event { return w.events }

// Err implements api.Watcher: it blocks until the stream is closed. Besides
// the cache's own errors (Gone, ServiceUnavailable), a watcher that fell a
// whole ring behind ends with TooManyRequests: watch again from the last
// resourceVersion received.
func (w *cacheWatcher) Err() error {
	<-w.done
	return w.err
}

// Stop implements api.Watcher; it waits for the goroutine to end.
func (w *cacheWatcher) Stop() {
	w.once.Do(w.cancel)
	<-w.done
}

// EncodeEvent implements api.EventEncoder: the event line is encoded once
// per object and event type for every watcher of the cache.
func (w *cacheWatcher) EncodeEvent(ev api.Event) ([]byte, error) { return w.c.encode(ev) }

func (w *cacheWatcher) send(ctx context.Context, ev api.Event) bool {
	select {
	case w.events <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *cacheWatcher) run(ctx context.Context, next uint64, initial []*api.Object) {
	defer close(w.done)
	defer close(w.events)
	defer w.cancel()
	for _, obj := range initial {
		if !w.send(ctx, api.Event{Type: api.Added, Object: obj}) {
			return
		}
	}
	last := w.start // the version of the last change or bookmark sent
	buf := make([]*cacheEntry, 0, maxBatch)
	for {
		var notify <-chan struct{}
		var err error
		var evicted bool
		buf, notify, err, evicted = w.c.read(next, buf[:0])
		if evicted {
			w.err = api.NewStatus(api.ReasonTooManyRequests,
				"the watch fell behind more changes than the watch cache keeps (at most %d changes, about %d bytes) and was ended: watch again from the last resourceVersion received",
				len(w.c.ring), w.c.maxBytes)
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
				w.err = api.NewInternal(e.err)
				return
			}
			if ev, ok := e.event(w.sel); ok {
				last = e.rev
				if !w.send(ctx, ev) {
					return
				}
			}
		}
		clear(buf)
	}
}

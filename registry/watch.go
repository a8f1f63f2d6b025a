package registry

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/store"
)

// Watch streams the changes of a kind in namespace ns (every namespace when
// ns is ""). With opts.ResourceVersion "" or "0" it first sends every
// current object as ADDED, then the changes after them; with a version N it
// replays every change after N. With a label selector, an object that stops
// matching is sent as DELETED and one that starts matching as ADDED.
// BOOKMARK events carry the version up to which everything was sent. Each
// change is sent exactly once, in revision order.
//
// Watches are served from the kind's shared watch cache (see watchcache.go)
// when it holds every change after N, else by a watch of their own on the
// store. The objects sent may be shared with other watchers: never modify
// them (DeepCopy first). Watch does not block beyond reading the store.
//
// Errors: BadRequest (bad selector or version), Gone (N is compacted away:
// list again and watch from the list's version), Timeout (N is newer than
// the store), ServiceUnavailable (after Close). A watch that fails later
// ends its stream; Err then tells why: Gone after a compaction,
// TooManyRequests when the watcher fell too far behind the changes (watch
// again from the last resourceVersion received), ServiceUnavailable when
// the registry closes.
func (r *Registry) Watch(ctx context.Context, kind, ns string, opts api.ListOptions) (api.Watcher, error) {
	k, _, err := r.admit(ctx, kind, authz.Attributes{Verb: authz.VerbWatch, Namespace: ns})
	if err != nil {
		return nil, err
	}
	sel, err := parseSelector(opts.LabelSelector)
	if err != nil {
		return nil, err
	}
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if !k.Namespaced {
		ns = ""
	}
	if rv > 0 {
		if err := r.checkRevision(ctx, k, ns, rv); err != nil {
			return nil, err
		}
	}
	// A cache started here starts at rv, or (for a list first) at the
	// store's current revision, before the list: either way rv is inside
	// its window.
	c, err := r.cache(ctx, k, rv)
	if err != nil {
		return nil, err
	}
	var initial []*api.Object
	if rv == 0 {
		list, err := r.List(ctx, k.Kind, ns, api.ListOptions{LabelSelector: opts.LabelSelector})
		if err != nil {
			return nil, err
		}
		initial = list.Items
		rv, _ = parseRV(list.ResourceVersion)
	}
	if next, ok := c.subscribe(rv); ok {
		return c.watch(ctx, ns, sel, rv, next, initial), nil
	}
	return r.watchDirect(ctx, k, ns, sel, rv, initial), nil
}

// checkRevision refuses a watch from a compacted or future revision.
func (r *Registry) checkRevision(ctx context.Context, k *Kind, ns string, rv int64) error {
	_, err := r.store.List(ctx, r.key(k, ns, ""), store.ListOptions{Revision: rv, Limit: 1})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrCompacted):
		return api.NewGone("resourceVersion %d is too old (compacted): list again and watch from the list's resourceVersion", rv)
	case errors.Is(err, store.ErrFutureRevision):
		return api.NewBadRequest("resourceVersion %d is newer than the store: use a resourceVersion returned by the server", rv)
	}
	return api.NewInternal(err)
}

// watchDirect serves a watch with an etcd watch of its own, from revision
// rv+1: for versions older than the watch cache's window.
func (r *Registry) watchDirect(ctx context.Context, k *Kind, ns string, sel labels.Selector, rv int64, initial []*api.Object) api.Watcher {
	wctx, cancel := context.WithCancel(ctx)
	w := &watcher{events: make(chan api.Event, 64), cancel: cancel, done: make(chan struct{})}
	sw := r.store.Watch(wctx, r.key(k, ns, ""), rv+1)
	go w.run(wctx, r, k, sel, initial, sw)
	return w
}

// watcher is an API watch served by its own etcd watch.
type watcher struct {
	events chan api.Event
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	err    error
}

func (w *watcher) Events() <-chan api.Event { return w.events }

func (w *watcher) Err() error {
	<-w.done
	return w.err
}

func (w *watcher) Stop() {
	w.once.Do(func() { w.cancel() })
	<-w.done
}

func (w *watcher) send(ctx context.Context, ev api.Event) bool {
	select {
	case w.events <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

func (w *watcher) run(ctx context.Context, r *Registry, k *Kind, sel labels.Selector, initial []*api.Object, sw *store.Watch) {
	defer close(w.done)
	defer close(w.events)
	defer sw.Close()
	for _, obj := range initial {
		if !w.send(ctx, api.Event{Type: api.Added, Object: obj}) {
			return
		}
	}
	tick := time.NewTicker(r.opts.BookmarkInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := sw.RequestProgress(ctx); err != nil && ctx.Err() == nil {
				w.err = api.NewInternal(err)
				return
			}
		case ev, ok := <-sw.Events():
			if !ok {
				if err := sw.Err(); err != nil && ctx.Err() == nil {
					w.err = watchErr(err)
				}
				return
			}
			out, ok, err := r.translate(k, sel, ev)
			if err != nil {
				w.err = api.NewInternal(err)
				return
			}
			if ok && !w.send(ctx, out) {
				return
			}
		}
	}
}

func watchErr(err error) error {
	if errors.Is(err, store.ErrCompacted) {
		return api.NewGone("the watch fell behind a compaction: %v; list again", err)
	}
	return api.NewInternal(err)
}

// translate turns a store event into an API event, applying the selector.
// ok is false when the event is not visible through the selector.
func (r *Registry) translate(k *Kind, sel labels.Selector, ev store.Event) (api.Event, bool, error) {
	e := r.newEntry(k, ev)
	switch {
	case e.bookmark != nil:
		return api.Event{Type: api.Bookmark, Object: e.bookmark}, true, nil
	case e.err != nil:
		return api.Event{}, false, e.err
	}
	out, ok := e.event(sel)
	return out, ok, nil
}

package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// Watch streams the changes of a kind in namespace ns (every namespace when
// ns is ""). With opts.ResourceVersion "" or "0" it first sends every
// current object as ADDED, then the changes after them; with a version N it
// replays every change after N. With a label selector, an object that stops
// matching is sent as DELETED and one that starts matching as ADDED.
// BOOKMARK events carry the version up to which everything was sent.
//
// Errors: BadRequest (bad selector or version), Gone (N is compacted away:
// list again and watch from the list's version). A watch that fails later
// ends its stream; Err then tells why (Gone after a compaction).
func (r *Registry) Watch(ctx context.Context, kind, ns string, opts api.ListOptions) (api.Watcher, error) {
	k, err := r.Lookup(kind)
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
	prefix := r.key(k, ns, "")
	wctx, cancel := context.WithCancel(ctx)
	w := &watcher{events: make(chan api.Event, 64), cancel: cancel, done: make(chan struct{})}
	var initial []*api.Object
	if rv == 0 {
		list, err := r.List(wctx, k.Kind, ns, api.ListOptions{LabelSelector: opts.LabelSelector})
		if err != nil {
			cancel()
			return nil, err
		}
		initial = list.Items
		rv, _ = parseRV(list.ResourceVersion)
	} else if _, err := r.store.List(wctx, prefix, store.ListOptions{Revision: rv, Limit: 1}); err != nil {
		cancel()
		if errors.Is(err, store.ErrCompacted) {
			return nil, api.NewGone("resourceVersion %d is too old (compacted): list again and watch from the list's resourceVersion", rv)
		}
		if errors.Is(err, store.ErrFutureRevision) {
			return nil, api.NewStatus(api.ReasonTimeout, "resourceVersion %d is newer than the store", rv)
		}
		return nil, api.NewInternal(err)
	}
	sw := r.store.Watch(wctx, prefix, rv+1)
	go w.run(wctx, r, k, sel, initial, sw)
	return w, nil
}

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
	if ev.Type == store.EventProgress {
		bm := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: k.Kind}}
		bm.ResourceVersion = formatRV(ev.Revision)
		return api.Event{Type: api.Bookmark, Object: bm}, true, nil
	}
	var prev, cur *api.Object
	var err error
	if ev.Prev != nil {
		if prev, err = r.decode(k, ev.Prev); err != nil {
			return api.Event{}, false, err
		}
	}
	if ev.Type == store.EventPut {
		if cur, err = r.decode(k, ev.KV); err != nil {
			return api.Event{}, false, err
		}
	}
	prevIn := prev != nil && sel.Matches(labels.Set(prev.Labels))
	curIn := cur != nil && sel.Matches(labels.Set(cur.Labels))
	switch {
	case curIn && prevIn:
		return api.Event{Type: api.Modified, Object: cur}, true, nil
	case curIn:
		return api.Event{Type: api.Added, Object: cur}, true, nil
	case prevIn:
		gone := prev
		if cur != nil {
			gone = cur // left the selection: show its latest state
		}
		gone.ResourceVersion = formatRV(ev.Revision)
		return api.Event{Type: api.Deleted, Object: gone}, true, nil
	case ev.Type != store.EventPut && ev.Type != store.EventDelete:
		return api.Event{}, false, fmt.Errorf("registry: unknown store event %d", ev.Type)
	}
	return api.Event{}, false, nil
}

package registry

import (
	"context"
	"errors"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/registry/internal/watchcache"
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
// Watches are served from the kind's shared watch cache (package
// registry/internal/watchcache) when it holds every change after N, else
// by a watch of their own on the store. The objects sent may be shared
// with other watchers: never modify them (DeepCopy first); events from the
// cache carry their object's shared JSON in Raw. Watch does not block
// beyond reading the store.
//
// Errors: BadRequest (bad selector or version), Gone (N is compacted away:
// list again and watch from the list's version), Timeout (N is newer than
// the store), ServiceUnavailable (after Close). A watch that fails later
// ends its stream; Err then tells why: Gone after a compaction,
// TooManyRequests when the watcher fell too far behind the changes (more
// than Options.WatchBacklog changes or Options.WatchBacklogBytes bytes
// waiting for its consumer, or a whole watch cache: watch again from the
// last resourceVersion received), ServiceUnavailable when the registry
// closes or the store stops answering (for longer than
// Options.StoreTimeout allows: watch again).
func (r *Registry) Watch(ctx context.Context, kind, ns string, opts api.ListOptions) (api.Watcher, error) {
	k, _, err := r.admit(ctx, kind, authz.Attributes{Verb: authz.VerbWatch, Namespace: ns})
	if err != nil {
		return nil, err
	}
	sel, err := selection(opts)
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
	ns = narrow(k, ns, sel)
	// Whether the watch starts with the current objects: by default, when
	// it starts from no version; SendInitialEvents decides otherwise.
	initialList := rv == 0
	if s := opts.SendInitialEvents; s != nil {
		initialList = *s
	}
	if rv == 0 && !initialList {
		// From now on, without the objects: the latest revision.
		if rv, err = r.store.Revision(ctx); err != nil {
			return nil, apiError(err, k.Kind, "")
		}
	}
	if rv > 0 {
		if err := r.checkRevision(ctx, k, ns, rv); err != nil {
			return nil, err
		}
	}
	// A cache started here starts at rv, or (for a list first) at the
	// store's current revision, before the list: either way rv is inside
	// its window.
	c, err := r.watch.Cache(ctx, r.watchSource(k), rv)
	if err != nil {
		return nil, apiError(err, k.Kind, "")
	}
	req := watchcache.Request{NS: ns, Sel: sel, RV: rv}
	if initialList {
		// The watch was authorized above; its first list needs no list
		// permission of its own. The list is read page by page as the
		// watcher sends it, never whole, at the latest revision (never
		// older than rv).
		lr, err := r.openList(ctx, k, ns, api.ListOptions{LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector}, false)
		if err != nil {
			return nil, apiError(err, k.Kind, "")
		}
		req.Initial, req.RV = lr, lr.pos.Rev
		req.EndInitial = opts.SendInitialEvents != nil
	}
	return c.Watch(ctx, req), nil
}

// Close stops the registry's shared watch caches and waits for their
// goroutines. Watches served from a cache deliver what the cache had and
// then end with a ServiceUnavailable error; watches served by their own
// etcd watch are not affected (they end with their context). A Watch
// after Close fails with ServiceUnavailable. It also stops the watch that
// counts other servers' writes toward namespace limits (limits.go). Call
// it before closing the store; it is idempotent and safe for concurrent
// use. The other methods keep working.
func (r *Registry) Close() {
	r.watch.Close()
	r.usage.Close()
}

// watchOptions configures the registry's watch caches.
func (r *Registry) watchOptions() watchcache.Options {
	return watchcache.Options{BookmarkInterval: r.opts.BookmarkInterval, Logger: r.opts.Logger,
		WatcherBacklog: r.opts.WatchBacklog, WatcherBacklogBytes: r.opts.WatchBacklogBytes,
		MapError: func(err error) error { return apiError(err, "", "") }, StoreTimeout: r.opts.StoreTimeout}
}

// watchSource is what the watch cache needs to know of kind k.
func (r *Registry) watchSource(k *Kind) watchcache.Source {
	return watchcache.Source{
		Kind:       k.Kind,
		Prefix:     r.key(k, "", ""),
		Namespaced: k.Namespaced,
		Decode:     func(kv *store.KV) (*api.Object, error) { return r.decode(k, kv) },
	}
}

// checkRevision refuses a watch from a compacted or future revision.
func (r *Registry) checkRevision(ctx context.Context, k *Kind, ns string, rv int64) error {
	_, err := r.store.List(ctx, r.key(k, ns, ""), store.ListOptions{Revision: rv, Limit: 1})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrCompacted):
		return api.NewExpired("resourceVersion %d is too old (compacted): list again and watch from the list's resourceVersion", rv)
	case errors.Is(err, store.ErrFutureRevision):
		return api.NewBadRequest("resourceVersion %d is newer than the store: use a resourceVersion returned by the server", rv)
	}
	return apiError(err, k.Kind, "")
}

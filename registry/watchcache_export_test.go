package registry

import (
	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry/internal/watchcache"
)

// SetWatchCacheLimits replaces the registry's watch caches by caches that
// keep at most capacity events and about maxBytes bytes per kind (the
// defaults when 0). Call it before the first Watch (tests only).
func SetWatchCacheLimits(r *Registry, capacity int, maxBytes int64) {
	o := r.watchOptions()
	o.Capacity, o.MaxBytes = capacity, maxBytes
	r.watch.Close()
	r.watch = watchcache.New(r.store, o)
}

// ServedFromCache reports whether w reads a shared watch cache (rather than
// a watch of its own on the store).
func ServedFromCache(w api.Watcher) bool { return watchcache.Shared(w) }

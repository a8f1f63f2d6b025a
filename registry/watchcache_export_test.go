package registry

import "cairn.dev/cairn/api"

// SetWatchCacheCapacity sets the ring size of the watch caches started
// after the call (tests only).
func SetWatchCacheCapacity(r *Registry, n int) {
	r.watch.mu.Lock()
	defer r.watch.mu.Unlock()
	r.watch.capacity = n
}

// ServedFromCache reports whether w reads a shared watch cache (rather than
// a watch of its own on the store).
func ServedFromCache(w api.Watcher) bool {
	_, ok := w.(*cacheWatcher)
	return ok
}

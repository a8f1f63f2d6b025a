package registry

import "cairn.dev/cairn/api"

// SetWatchCacheCapacity sets the ring size of the watch caches started
// after the call (tests only).
func SetWatchCacheCapacity(r *Registry, n int) {
	r.watch.mu.Lock()
	defer r.watch.mu.Unlock()
	r.watch.capacity = n
}

// SetWatchCacheBytes sets the byte bound of the watch caches started after
// the call (tests only).
func SetWatchCacheBytes(r *Registry, n int64) {
	r.watch.mu.Lock()
	defer r.watch.mu.Unlock()
	r.watch.maxBytes = n
}

// WatchCacheStats describes a running watch cache (tests only).
type WatchCacheStats struct {
	Entries    int   // entries in the ring
	Bytes      int64 // the bytes the cache counts against its bound
	EntryBytes int64 // of which its entries' own sizes (the rest: encodings)
	Since      int64 // the ring holds every change after this revision
}

// WatchCacheUsage describes the running watch cache of kind; ok is false
// when none runs (tests only).
func WatchCacheUsage(r *Registry, kind string) (_ WatchCacheStats, ok bool) {
	r.watch.mu.Lock()
	c := r.watch.caches[kind]
	r.watch.mu.Unlock()
	if c == nil {
		return WatchCacheStats{}, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	st := WatchCacheStats{Entries: int(c.head - c.first), Bytes: c.bytes.Load(), Since: c.since}
	for s := c.first; s < c.head; s++ {
		st.EntryBytes += c.at(s).size
	}
	return st, true
}

// DropWatchCacheEntries empties the ring of the running watch cache of
// kind, as its bounds would; ok is false when none runs (tests only).
func DropWatchCacheEntries(r *Registry, kind string) (ok bool) {
	r.watch.mu.Lock()
	c := r.watch.caches[kind]
	r.watch.mu.Unlock()
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.first < c.head {
		c.drop()
	}
	return true
}

// ServedFromCache reports whether w reads a shared watch cache (rather than
// a watch of its own on the store).
func ServedFromCache(w api.Watcher) bool {
	_, ok := w.(*cacheWatcher)
	return ok
}

package controller

import (
	"strconv"
	"sync"
)

// Written remembers, per key, the resourceVersion of the last write a
// reconciler made to its object, so that a reconcile reading an informer
// cache that has not seen that write yet can tell (Stale) and wait for the
// watch event instead of acting twice on the old state. The zero value is
// ready to use; it is safe for concurrent use. A resourceVersion that is
// not a number is ignored (never stale).
type Written struct {
	mu sync.Mutex
	rv map[string]int64
}

// Wrote records that the write of key produced resourceVersion rv (only a
// newer one replaces what is recorded).
func (w *Written) Wrote(key, rv string) {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rv == nil {
		w.rv = map[string]int64{}
	}
	if n > w.rv[key] {
		w.rv[key] = n
	}
}

// Stale reports whether rv, the resourceVersion of key as a cache holds
// it, is older than the last write recorded for key.
func (w *Written) Stale(key, rv string) bool {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return n < w.rv[key]
}

// Forget drops what is recorded for key (its object is gone).
func (w *Written) Forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.rv, key)
}

package controller

import (
	"strconv"
	"sync"
	"time"
)

// WrittenFor bounds how long Written holds a write: a cache that never
// shows it (the object was deleted meanwhile by someone else, and its
// key not forgotten) does not hold a key back for good. Kubernetes'
// ControllerExpectations expire in the same way.
const WrittenFor = 15 * time.Second

// Written is the one guard of cairn's controllers against acting on a
// stale cache. It remembers, per key, the resourceVersion of the last
// write a reconciler made to an object (its own, or another it manages),
// so that a reconcile reading an informer cache that has not seen that
// write yet can tell (Stale) and wait for the watch event instead of
// acting twice on the old state. The zero value is ready to use; it is
// safe for concurrent use. A resourceVersion that is not a number is
// ignored (never stale); a write is forgotten once a cache shows it, or
// after WrittenFor.
type Written struct {
	mu  sync.Mutex
	rv  map[string]written
	now func() time.Time // time.Now when nil (tests set it)
}

// written is a write recorded: its resourceVersion and when.
type written struct {
	rv int64
	at time.Time
}

func (w *Written) clock() time.Time {
	if w.now != nil {
		return w.now()
	}
	return time.Now()
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
		w.rv = map[string]written{}
	}
	if n > w.rv[key].rv {
		w.rv[key] = written{rv: n, at: w.clock()}
	}
}

// Stale reports whether rv, the resourceVersion of key as a cache holds
// it, is older than the last write recorded for key; rv "" says the cache
// has no such object, which is stale when a write of key is recorded (a
// create not seen yet). A record older than WrittenFor is dropped (not
// stale), and so is one the cache has caught up with.
func (w *Written) Stale(key, rv string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.rv[key]
	if !ok {
		return false
	}
	if w.clock().Sub(last.at) > WrittenFor {
		delete(w.rv, key)
		return false
	}
	if rv == "" {
		return true
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return false
	}
	if n >= last.rv {
		delete(w.rv, key)
		return false
	}
	return true
}

// Forget drops what is recorded for key (its object is gone).
func (w *Written) Forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.rv, key)
}

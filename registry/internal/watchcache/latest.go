package watchcache

import "cairn.dev/cairn/api"

// The latest version of each recently changed key.
//
// A cache keeps, for every key whose latest put is still in its ring, that
// put's entry (Cache.latest). Two readers use it. The cache itself takes
// the previous object of the key's next event from there rather than
// decoding the event's previous value again. The registry's writes
// (Caches.Latest) take the object they replace from there rather than
// reading it from the store and decoding it: the answer may be stale, which
// is harmless to them, as to any read they guard, since a write is
// conditioned on the revision of what it read and reads linearizably when
// that condition fails.

// Latest is a key's latest version as a cache holds it. Obj is shared
// with the cache's watchers: copy it before changing anything.
type Latest struct {
	Obj *api.Object
	// Rev is the version's revision (its ModRevision); Size is the length
	// of its stored value.
	Rev  int64
	Size int
}

// Latest returns the latest version of key that the running cache of kind
// holds, if it holds one: a key put recently enough for its entry to be in
// the ring, and not deleted since. It never blocks on the store.
func (cs *Caches) Latest(kind, key string) (Latest, bool) {
	c, _ := cs.running(kind)
	if c == nil {
		return Latest{}, false
	}
	c.lmu.Lock()
	e := c.latest[key]
	c.lmu.Unlock()
	if e == nil {
		return Latest{}, false
	}
	return Latest{Obj: e.cur, Rev: e.rev, Size: e.valueLen}, true
}

// noteLatest records the entry just made of a store event: a put becomes
// its key's latest, a delete forgets the key. Only run calls it (run alone
// writes latest; it reads it without the lock).
func (c *Cache) noteLatest(e *entry) {
	if e.key == "" {
		return
	}
	c.lmu.Lock()
	defer c.lmu.Unlock()
	if e.cur != nil {
		c.latest[e.key] = e
	} else {
		delete(c.latest, e.key)
	}
}

// forgetLatest forgets old's key when old, leaving the ring, is still its
// latest. Called by drop, in run.
func (c *Cache) forgetLatest(old *entry) {
	c.lmu.Lock()
	defer c.lmu.Unlock()
	if c.latest[old.key] == old {
		delete(c.latest, old.key)
	}
}

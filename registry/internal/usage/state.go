package usage

import "hash/maphash"

// state is the accounting itself: plain data, no I/O and no lock (the
// Tracker serializes every call). It keeps, per key, the size and mod
// revision of the newest version it knows, and per namespace the sums over
// its live keys, so that usage(ns) is always the sum of the newest sizes
// known: applying versions in any order, each at most once per revision,
// converges on the right total.
type state struct {
	seeds [2]maphash.Seed
	keys  map[keyHash]entry
	ns    map[string]*nsState
	// tombs are the deletions applied ahead of the watch, oldest first
	// (roughly): their keys stay as tombstones until rev passes them.
	tombs []tomb
	// rev: every change up to rev has been applied (from the list, then
	// from the watch).
	rev int64
}

// keyHash identifies a key by two independent 64-bit keyed hashes: 16
// bytes instead of the key itself. The seeds are random per state, so
// nobody can choose names that collide; two of a million keys collide with
// a probability near 10^-27.
type keyHash [2]uint64

// entry is the newest version known of a key.
type entry struct {
	rev int64
	// size is the stored value's length; -1 marks a tombstone: the key was
	// deleted at rev by a write of this server that the watch has not
	// delivered yet.
	size int64
}

type tomb struct {
	key keyHash
	rev int64
}

// nsState is one namespace's accounting.
type nsState struct {
	objects, bytes int64
	// heldObjects and heldBytes are reserved by writes in flight.
	heldObjects, heldBytes int64
	// declared are the limits the Namespace declares (Unset fields take
	// the defaults); live reports that the Namespace object exists.
	declared Limits
	live     bool
}

func newState() *state {
	return &state{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		keys: map[keyHash]entry{}, ns: map[string]*nsState{}}
}

func (s *state) hash(key string) keyHash {
	return keyHash{maphash.String(s.seeds[0], key), maphash.String(s.seeds[1], key)}
}

// of returns the accounting of namespace ns, creating it.
func (s *state) of(ns string) *nsState {
	u := s.ns[ns]
	if u == nil {
		u = &nsState{declared: Limits{Objects: Unset, Bytes: Unset}}
		s.ns[ns] = u
	}
	return u
}

// forget drops the accounting of ns when it holds nothing worth keeping.
func (s *state) forget(ns string) {
	if u := s.ns[ns]; u != nil && !u.live && u.objects == 0 && u.bytes == 0 && u.heldObjects == 0 && u.heldBytes == 0 {
		delete(s.ns, ns)
	}
}

// size returns the size of the newest version known of key, or -1 when
// none is live.
func (s *state) size(key string) int64 {
	e, ok := s.keys[s.hash(key)]
	if !ok {
		return -1
	}
	return e.size
}

// apply records c, a change of a tracked key committed at revision rev,
// unless a version at least as new is known. watched tells that it comes
// from the list or the watch (which deliver every key in revision order),
// else from this server's own commit, applied ahead of the watch: its
// deletions then stay as tombstones, so that an older version the watch
// delivers later cannot bring the key back.
func (s *state) apply(c *Change, rev int64, watched bool) {
	h := s.hash(c.Key)
	e, known := s.keys[h]
	if known && e.rev >= rev {
		return
	}
	u := s.of(c.ns)
	switch {
	case c.namespace && c.Deleted:
		u.live, u.declared = false, Limits{Objects: Unset, Bytes: Unset}
	case c.namespace:
		u.live, u.declared = true, c.Limits
	default:
		if known && e.size >= 0 {
			u.objects--
			u.bytes -= e.size
		}
		if !c.Deleted {
			u.objects++
			u.bytes += c.Size
		}
	}
	switch {
	case !c.Deleted:
		s.keys[h] = entry{rev: rev, size: c.Size}
	case watched:
		delete(s.keys, h)
	default:
		s.keys[h] = entry{rev: rev, size: -1}
		s.tombs = append(s.tombs, tomb{key: h, rev: rev})
	}
	s.forget(c.ns)
}

// advance records that every change up to rev has been applied, and drops
// the tombstones it passed: no version older than them can arrive any more.
func (s *state) advance(rev int64) {
	if rev <= s.rev {
		return
	}
	s.rev = rev
	n := 0
	for n < len(s.tombs) && s.tombs[n].rev <= rev {
		t := s.tombs[n]
		if e, ok := s.keys[t.key]; ok && e.rev == t.rev && e.size < 0 {
			delete(s.keys, t.key)
		}
		n++
	}
	if n > 0 {
		s.tombs = append(s.tombs[:0], s.tombs[n:]...)
	}
}

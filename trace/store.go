package trace

import (
	"container/list"
	"slices"
	"sync"

	"cairn.dev/cairn/api"
)

// Default bounds of a Store.
const (
	// DefaultPerObject is how many reconciles a Store keeps per object.
	DefaultPerObject = 10
	// DefaultMaxObjects is how many objects a Store keeps traces of.
	DefaultMaxObjects = 10000
)

// Store keeps the last reconciles of each object in memory, bounded twice:
// at most perObject reconciles per object (the oldest is dropped first)
// and at most maxObjects objects (the object whose trace was least
// recently added to is dropped first). With the defaults and the bounds of
// a Recorder, the worst case is DefaultMaxObjects × DefaultPerObject ×
// MaxSteps steps of MaxMessageBytes; real traces are far smaller. Nothing
// is written to the API's store.
//
// A Store is safe for concurrent use; its methods never block for long.
type Store struct {
	perObject, maxObjects int

	mu      sync.Mutex
	objects map[api.ObjectReference]*list.Element // of *entry
	lru     *list.List                            // front: most recently added to
}

// entry is the ring of one object's reconciles, oldest first.
type entry struct {
	ref  api.ObjectReference
	uid  string // of the last reconcile that named one
	recs []api.TraceReconcile
}

// NewStore returns an empty store keeping perObject reconciles for each of
// at most maxObjects objects; a bound <= 0 takes its default
// (DefaultPerObject, DefaultMaxObjects).
func NewStore(perObject, maxObjects int) *Store {
	if perObject <= 0 {
		perObject = DefaultPerObject
	}
	if maxObjects <= 0 {
		maxObjects = DefaultMaxObjects
	}
	return &Store{
		perObject:  perObject,
		maxObjects: maxObjects,
		objects:    make(map[api.ObjectReference]*list.Element),
		lru:        list.New(),
	}
}

// Add files rec under the object ref, dropping that object's oldest
// reconcile beyond the per-object bound, and every reconcile of a
// predecessor when rec names another uid than the last one that named
// one (the object was deleted and created again) and, when a new object exceeds the
// object bound, the traces of the least recently updated object. The store
// keeps its own copy of rec's steps.
func (s *Store) Add(ref api.ObjectReference, rec api.TraceReconcile) {
	rec.Steps = slices.Clone(rec.Steps)
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.objects[ref]; ok {
		e := el.Value.(*entry)
		if rec.UID != "" && e.uid != "" && rec.UID != e.uid {
			e.recs = e.recs[:0]
		}
		if rec.UID != "" {
			e.uid = rec.UID
		}
		if len(e.recs) < s.perObject {
			e.recs = append(e.recs, rec)
		} else {
			copy(e.recs, e.recs[1:])
			e.recs[len(e.recs)-1] = rec
		}
		s.lru.MoveToFront(el)
		return
	}
	e := &entry{ref: ref, uid: rec.UID, recs: make([]api.TraceReconcile, 1, min(s.perObject, 4))}
	e.recs[0] = rec
	s.objects[ref] = s.lru.PushFront(e)
	for s.lru.Len() > s.maxObjects {
		oldest := s.lru.Back()
		s.lru.Remove(oldest)
		delete(s.objects, oldest.Value.(*entry).ref)
	}
}

// Get returns a copy of the trace of the object kind ns/name (ns empty for
// cluster-scoped kinds), its reconciles oldest first, and false when the
// store holds none for it. The caller may modify the copy.
func (s *Store) Get(kind, ns, name string) (*api.Trace, bool) {
	ref := api.ObjectReference{Kind: kind, Namespace: ns, Name: name}
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.objects[ref]
	if !ok {
		return nil, false
	}
	e := el.Value.(*entry)
	t := api.NewTrace(ref)
	t.Reconciles = make([]api.TraceReconcile, len(e.recs))
	for i, r := range e.recs {
		r.Steps = slices.Clone(r.Steps)
		t.Reconciles[i] = r
	}
	return t, true
}

// Len returns the number of objects the store holds traces of.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.objects)
}

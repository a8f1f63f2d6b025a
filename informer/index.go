package informer

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"cairn.dev/cairn/api"
)

// Index errors.
var (
	// ErrNoIndex is returned when a lookup names an index that was never
	// added.
	ErrNoIndex = errors.New("informer: no such index")
	// ErrIndexExists is returned by AddIndex when the name is taken.
	ErrIndexExists = errors.New("informer: index already exists")
)

// IndexFunc returns the values under which an object is indexed: an object
// is found by ByIndex(name, v) for every v it returns (duplicates count
// once; none leaves the object out of the index).
//
// It must be a pure function of the object: quick, deterministic, without
// side effects, and it must not call the informer (it runs with the cache
// locked). It must not modify obj.
type IndexFunc func(obj *api.Object) []string

// Names of the built-in indexes, for use with AddIndex and ByIndex.
// Controllers sharing an informer (see Factory) agree on these names.
const (
	// OwnerUIDIndex finds the dependents of an owner by the owner's uid.
	OwnerUIDIndex = "ownerUID"
	// NamespaceIndex finds the objects of a namespace.
	NamespaceIndex = "namespace"
)

// IndexOwnerUID indexes an object by the uid of each of its owner
// references (references without a uid are skipped). Register it under
// OwnerUIDIndex.
func IndexOwnerUID(obj *api.Object) []string {
	out := make([]string, 0, len(obj.OwnerReferences))
	for _, r := range obj.OwnerReferences {
		if r.UID != "" {
			out = append(out, r.UID)
		}
	}
	return out
}

// IndexNamespace indexes an object by its namespace ("" for cluster-scoped
// objects). Register it under NamespaceIndex.
func IndexNamespace(obj *api.Object) []string { return []string{obj.Namespace} }

// index maps the values of one IndexFunc to the keys of the cached objects
// that have them. It is guarded by the informer's mu, like the cache.
type index struct {
	f IndexFunc
	// byValue holds, per value, the set of object keys.
	byValue map[string]map[string]struct{}
	// byKey holds, per object key, the values it was indexed under, so an
	// update or a deletion touches only that object's entries.
	byKey map[string][]string
}

func newIndex(f IndexFunc) *index {
	return &index{f: f, byValue: map[string]map[string]struct{}{}, byKey: map[string][]string{}}
}

// set (re)indexes the object stored under key; obj nil removes the key.
// It costs O(values of the old and the new state of the object).
func (x *index) set(key string, obj *api.Object) {
	for _, v := range x.byKey[key] {
		keys := x.byValue[v]
		delete(keys, key)
		if len(keys) == 0 {
			delete(x.byValue, v)
		}
	}
	delete(x.byKey, key)
	if obj == nil {
		return
	}
	values := x.f(obj)
	if len(values) == 0 {
		return
	}
	values = slices.Clone(values)
	for _, v := range values {
		keys := x.byValue[v]
		if keys == nil {
			keys = map[string]struct{}{}
			x.byValue[v] = keys
		}
		keys[key] = struct{}{}
	}
	x.byKey[key] = values
}

// reindex updates every index for the object now stored under key (nil:
// deleted). The caller holds i.mu for writing.
func (i *core) reindex(key string, obj *api.Object) {
	for _, x := range i.indexes {
		x.set(key, obj)
	}
}

// AddIndex adds an index named name, computed by f, and builds it over the
// objects cached so far; from then on it is kept current with the cache on
// every change, under the same lock, so a lookup never sees the cache and
// an index disagree. It may be called before or after Run, from any
// goroutine (including a handler). It blocks readers of the cache while it
// builds the index.
//
// Errors: ErrIndexExists when name is taken (controllers sharing an
// informer and wanting a built-in index can treat it as success); an error
// when f is nil.
func (i *core) AddIndex(name string, f IndexFunc) error {
	if f == nil {
		return fmt.Errorf("informer: index %q: nil IndexFunc", name)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if _, ok := i.indexes[name]; ok {
		return fmt.Errorf("%w: %q on %s", ErrIndexExists, name, i.kind)
	}
	x := newIndex(f)
	for k, o := range i.items {
		x.set(k, o)
	}
	i.indexes[name] = x
	return nil
}

// ByIndex returns the cached objects that index name maps value to, sorted
// by namespace and name (none: an empty slice). The objects are shared:
// DeepCopy before modifying one. It costs O(k log k) for k results and
// never blocks on the network.
//
// Errors: ErrNoIndex when no index is called name.
func (i *core) ByIndex(name, value string) ([]*api.Object, error) {
	i.mu.RLock()
	x, ok := i.indexes[name]
	if !ok {
		i.mu.RUnlock()
		return nil, fmt.Errorf("%w: %q on %s", ErrNoIndex, name, i.kind)
	}
	keys := x.byValue[value]
	out := make([]*api.Object, 0, len(keys))
	for k := range keys {
		out = append(out, i.items[k])
	}
	i.mu.RUnlock()
	sortObjects(out)
	return out, nil
}

// IndexKeys returns the keys (api.Key(namespace, name)) of the cached
// objects that index name maps value to, sorted: what a controller enqueues
// without touching the objects.
//
// Errors: ErrNoIndex when no index is called name.
func (i *core) IndexKeys(name, value string) ([]string, error) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	x, ok := i.indexes[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q on %s", ErrNoIndex, name, i.kind)
	}
	return slices.Sorted(maps.Keys(x.byValue[value])), nil
}

// IndexValues returns, sorted, every value index name holds at least one
// object under.
//
// Errors: ErrNoIndex when no index is called name.
func (i *core) IndexValues(name string) ([]string, error) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	x, ok := i.indexes[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q on %s", ErrNoIndex, name, i.kind)
	}
	return slices.Sorted(maps.Keys(x.byValue)), nil
}

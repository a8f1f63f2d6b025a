package registry

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/labels"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// cacheEntry is one store event decoded once, shared by every watcher that
// sees it. It is immutable after construction, and so are the objects it
// points to: watchers hand them out as they are.
type cacheEntry struct {
	rev int64
	ns  string // the namespace segment of the key ("" for cluster-scoped kinds)
	// bookmark is set for a progress notification: every change up to rev
	// has been seen. prev, cur, gone and err are then unset.
	bookmark *api.Object
	prev     *api.Object // the object before the change; nil when it did not exist
	cur      *api.Object // the object after a put; nil for a delete
	gone     *api.Object // for a delete: prev, at the deletion revision
	err      error       // the stored value did not decode: watchers that see it fail
}

// newEntry decodes a store event (once; the watch cache shares the result).
// A value that does not decode gives an entry carrying the error, so only
// the watchers that would have seen it fail.
func (r *Registry) newEntry(k *Kind, ev store.Event) *cacheEntry {
	e := &cacheEntry{rev: ev.Revision}
	if ev.Type == store.EventProgress {
		bm := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: k.Kind}}
		bm.ResourceVersion = formatRV(ev.Revision)
		e.bookmark = bm
		return e
	}
	if ev.KV != nil {
		e.ns = keyNamespace(k, ev.KV.Key)
	}
	var err error
	if ev.Prev != nil {
		if e.prev, err = r.decode(k, ev.Prev); err != nil {
			e.err = err
			return e
		}
	}
	switch ev.Type {
	case store.EventPut:
		if e.cur, err = r.decode(k, ev.KV); err != nil {
			e.err = err
		}
	case store.EventDelete:
		if e.prev != nil {
			g := *e.prev // shallow: the copy shares prev's immutable maps
			g.ResourceVersion = formatRV(ev.Revision)
			e.gone = &g
		}
	default:
		e.err = fmt.Errorf("registry: unknown store event %d", ev.Type)
	}
	return e
}

// keyNamespace returns the namespace segment of a namespaced kind's key.
func keyNamespace(k *Kind, key string) string {
	if !k.Namespaced {
		return ""
	}
	rest := strings.TrimPrefix(key, KeyPrefix+k.Plural+"/")
	ns, _, _ := strings.Cut(rest, "/")
	return ns
}

// event is what a watcher with selector sel sees of the entry: a change
// visible before and after is MODIFIED, one that becomes visible is ADDED,
// one that stops being visible (deleted, or no longer matching) is DELETED
// with the object's latest state. ok is false when nothing is visible.
// Bookmarks and error entries are the caller's business.
func (e *cacheEntry) event(sel labels.Selector) (api.Event, bool) {
	prevIn := e.prev != nil && matches(sel, e.prev)
	curIn := e.cur != nil && matches(sel, e.cur)
	switch {
	case curIn && prevIn:
		return api.Event{Type: api.Modified, Object: e.cur}, true
	case curIn:
		return api.Event{Type: api.Added, Object: e.cur}, true
	case prevIn && e.cur != nil:
		return api.Event{Type: api.Deleted, Object: e.cur}, true // left the selection
	case prevIn:
		return api.Event{Type: api.Deleted, Object: e.gone}, true
	}
	return api.Event{}, false
}

func matches(sel labels.Selector, o *api.Object) bool {
	return sel.Empty() || sel.Matches(labels.Set(o.Labels))
}

// encoding caches the wire form of one shared object: its JSON once, and
// the watch event line once per event type.
type encoding struct {
	obj   *api.Object
	once  sync.Once
	raw   []byte
	err   error
	lines [3]atomic.Pointer[[]byte] // ADDED, MODIFIED, DELETED
}

func lineIndex(typ string) int {
	switch typ {
	case api.Added:
		return 0
	case api.Modified:
		return 1
	case api.Deleted:
		return 2
	}
	return -1
}

// line returns the newline-terminated JSON of api.WatchEvent{typ, obj},
// byte for byte what json.Marshal gives. The result is shared.
func (en *encoding) line(typ string) ([]byte, error) {
	en.once.Do(func() { en.raw, en.err = json.Marshal(en.obj) })
	if en.err != nil {
		return nil, en.err
	}
	i := lineIndex(typ)
	if i < 0 {
		return eventLine(typ, en.raw)
	}
	if p := en.lines[i].Load(); p != nil {
		return *p, nil
	}
	l, err := eventLine(typ, en.raw)
	if err != nil {
		return nil, err
	}
	en.lines[i].CompareAndSwap(nil, &l)
	return *en.lines[i].Load(), nil
}

// eventLine frames a marshaled object as a watch event line.
func eventLine(typ string, raw []byte) ([]byte, error) {
	t, err := json.Marshal(typ)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(raw)+len(t)+22)
	b = append(b, `{"type":`...)
	b = append(b, t...)
	b = append(b, `,"object":`...)
	b = append(b, raw...)
	b = append(b, "}\n"...)
	return b, nil
}

// encodeEvent is the uncached wire form of an event.
func encodeEvent(ev api.Event) ([]byte, error) {
	raw, err := json.Marshal(ev.Object)
	if err != nil {
		return nil, err
	}
	return eventLine(ev.Type, raw)
}

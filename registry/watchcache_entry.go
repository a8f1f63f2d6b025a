package registry

import (
	"encoding/json"
	"fmt"
	"maps"
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
//
// Of the object's previous version an entry keeps only what a watcher needs
// to filter (whether it existed, and its labels; its namespace is the key's)
// rather than the whole decoded object: a put of a large object would
// otherwise hold two copies of it (for Secrets, of their plaintext). A
// delete is the exception: its event carries the previous version, so the
// entry keeps that object in full, once, as gone.
type cacheEntry struct {
	rev int64
	ns  string // the namespace segment of the key ("" for cluster-scoped kinds)
	// size approximates the bytes the entry holds (its objects, not their
	// encodings, which the cache counts when they are made).
	size int64
	// bookmark is set for a progress notification: every change up to rev
	// has been seen. The other fields are then unset.
	bookmark *api.Object
	existed  bool              // the object existed before the change
	labels   map[string]string // the labels it had then; cur's own map when they did not change
	cur      *api.Object       // the object after a put; nil for a delete
	gone     *api.Object       // for a delete: the object as it was, at the deletion revision
	err      error             // the stored value did not decode: watchers that see it fail
}

// Approximate memory costs beyond an object's stored bytes: the entry, its
// slot in the encodings map and its encoding record; the decoded object's
// structs, maps and string headers; one map entry.
const (
	entryOverhead  = 320
	objectOverhead = 640
	mapEntryCost   = 64
)

// newEntry decodes a store event (once; the watch cache shares the result).
// A value that does not decode gives an entry carrying the error, so only
// the watchers that would have seen it fail.
func (r *Registry) newEntry(k *Kind, ev store.Event) *cacheEntry {
	e := &cacheEntry{rev: ev.Revision, size: entryOverhead}
	if ev.Type == store.EventProgress {
		bm := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: k.Kind}}
		bm.ResourceVersion = formatRV(ev.Revision)
		e.bookmark = bm
		e.size += objectOverhead
		return e
	}
	if ev.KV != nil {
		e.ns = keyNamespace(k, ev.KV.Key)
	}
	var prev *api.Object
	if ev.Prev != nil {
		var err error
		if prev, err = r.decode(k, ev.Prev); err != nil {
			e.err = err
			return e
		}
		e.existed, e.labels = true, prev.Labels
	}
	switch ev.Type {
	case store.EventPut:
		cur, err := r.decode(k, ev.KV)
		if err != nil {
			e.err = err
			return e
		}
		e.cur = cur
		e.size += objectOverhead + int64(len(ev.KV.Value))
		if prev != nil {
			if maps.Equal(prev.Labels, cur.Labels) {
				e.labels = cur.Labels // the usual case: nothing of prev is kept
			} else {
				e.size += labelsSize(prev.Labels)
			}
		}
	case store.EventDelete:
		if prev != nil {
			g := *prev // shallow: the copy shares prev's immutable maps
			g.ResourceVersion = formatRV(ev.Revision)
			e.gone = &g
			e.size += objectOverhead + int64(len(ev.Prev.Value))
		}
	default:
		e.err = fmt.Errorf("registry: unknown store event %d", ev.Type)
	}
	return e
}

// labelsSize approximates the memory of a label map of its own.
func labelsSize(l map[string]string) int64 {
	n := int64(mapEntryCost)
	for k, v := range l {
		n += mapEntryCost + int64(len(k)+len(v))
	}
	return n
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
	prevIn := e.existed && (sel.Empty() || sel.Matches(labels.Set(e.labels)))
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

// natural is the type of the event that a watcher without a selector gets
// for obj, one of the entry's objects: the one whose line the cache keeps.
func (e *cacheEntry) natural(obj *api.Object) string {
	switch {
	case obj == e.gone:
		return api.Deleted
	case e.existed:
		return api.Modified
	}
	return api.Added
}

func matches(sel labels.Selector, o *api.Object) bool {
	return sel.Empty() || sel.Matches(labels.Set(o.Labels))
}

// States of an encoding's line in the cache's byte count.
const (
	linePending   int32 = iota // not made yet, or its object is still in the ring
	lineCharged                // made while its object was in the ring: counted
	lineForgotten              // its object left the ring first: never counted
)

// encoding caches the wire form of one shared object: a single line, for
// the event type most watchers send it as (typ). Other types, sent only
// through selectors, are framed anew from the JSON inside that line.
type encoding struct {
	obj   *api.Object
	typ   string
	bytes *atomic.Int64 // the cache's byte count, charged with the line
	once  sync.Once
	line  []byte
	off   int // where the object's JSON starts in line
	err   error
	state atomic.Int32
}

// lineFor returns the newline-terminated JSON of api.WatchEvent{typ, obj},
// byte for byte what json.Marshal gives. The result may be shared.
func (en *encoding) lineFor(typ string) ([]byte, error) {
	en.once.Do(func() {
		raw, err := json.Marshal(en.obj)
		if err != nil {
			en.err = err
			return
		}
		if en.line, en.err = eventLine(en.typ, raw); en.err != nil {
			return
		}
		en.off = len(en.line) - len(raw) - 2
		if en.state.CompareAndSwap(linePending, lineCharged) {
			en.bytes.Add(int64(len(en.line)))
		}
	})
	if en.err != nil {
		return nil, en.err
	}
	if typ == en.typ {
		return en.line, nil
	}
	return eventLine(typ, en.line[en.off:len(en.line)-2])
}

// forget takes the line out of the cache's byte count, or keeps it from
// ever entering it, once the object has left the ring. Call it once.
func (en *encoding) forget() {
	if !en.state.CompareAndSwap(linePending, lineForgotten) {
		en.bytes.Add(-int64(len(en.line))) // charged: line is set
	}
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

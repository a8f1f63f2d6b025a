package watchcache

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// entry is one store event decoded once, shared by every watcher that sees
// it. It is immutable once in the ring, and so are the objects it points
// to: watchers hand them out as they are.
//
// Of the object's previous version an entry keeps only what a watcher needs
// to filter (whether it existed, and its labels; its namespace is the key's)
// rather than the whole decoded object: a put of a large object would
// otherwise hold two copies of it (for Secrets, of their plaintext). A
// delete is the exception: its event carries the previous version, so the
// entry keeps that object in full, once, as gone.
type entry struct {
	rev int64
	key string // the store key of a put or delete
	// valueLen is the length of a put's stored value.
	valueLen int
	ns       string // the namespace segment of the key ("" for cluster-scoped kinds)
	// size approximates the bytes the entry holds (its objects, not their
	// encodings, which the cache counts when they are made).
	size int64
	// before is the sum of the sizes of the entries the ring received
	// before this one (set as it enters the ring).
	before int64
	// bookmark is set for a progress notification: every change up to rev
	// has been seen. The other fields are then unset.
	bookmark *api.Object
	existed  bool              // the object existed before the change
	labels   map[string]string // the labels it had then; cur's own map when they did not change
	cur      *api.Object       // the object after a put; nil for a delete
	gone     *api.Object       // for a delete: the object as it was, at the deletion revision
	err      error             // the stored value did not decode: watchers that see it fail

	// The JSON of cur and gone, made once for every watcher; set when the
	// entry enters the ring (nil for an entry of a watch of its own).
	curEnc, goneEnc *encoding
}

// Approximate memory costs beyond an object's stored bytes: the entry and
// its encoding records; the decoded object's structs, maps and string
// headers; one map entry.
const (
	entryOverhead  = 320
	objectOverhead = 640
	mapEntryCost   = 64
)

// newEntry decodes a store event (once; the cache shares the result). A
// value that does not decode gives an entry carrying the error, so only
// the watchers that would have seen it fail. The previous value is not
// decoded again when latest (nil: none) holds the entry that put it: the
// object decoded then is the same.
func newEntry(src *Source, ev store.Event, latest map[string]*entry) *entry {
	e := &entry{rev: ev.Revision, size: entryOverhead}
	if ev.Type == store.EventProgress {
		bm := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: src.Kind}}
		bm.ResourceVersion = formatRV(ev.Revision)
		e.bookmark = bm
		e.size += objectOverhead
		return e
	}
	if ev.KV != nil {
		e.key = ev.KV.Key
		e.ns = keyNamespace(src, ev.KV.Key)
	}
	var prev *api.Object
	if ev.Prev != nil {
		if put := latest[e.key]; put != nil && put.cur != nil && put.rev == ev.Prev.ModRevision {
			prev = put.cur
		} else {
			var err error
			if prev, err = src.Decode(ev.Prev); err != nil {
				e.err = err
				return e
			}
		}
		e.existed, e.labels = true, prev.Labels
	}
	switch ev.Type {
	case store.EventPut:
		cur, err := src.Decode(ev.KV)
		if err != nil {
			e.err = err
			return e
		}
		e.cur, e.valueLen = cur, len(ev.KV.Value)
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
		e.err = fmt.Errorf("watch cache: unknown store event %d", ev.Type)
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
func keyNamespace(src *Source, key string) string {
	if !src.Namespaced {
		return ""
	}
	rest := strings.TrimPrefix(key, src.Prefix)
	ns, _, _ := strings.Cut(rest, "/")
	return ns
}

// event is what a watcher with selection sel sees of the entry: a change
// visible before and after is MODIFIED, one that becomes visible is ADDED,
// one that stops being visible (deleted, or no longer matching) is DELETED
// with the object's latest state. ok is false when nothing is visible.
// Bookmarks and error entries are the caller's business. The event carries
// no Raw: see withRaw.
func (e *entry) event(sel Selection) (api.ObjectEvent, bool) {
	if o := cmpOr(e.cur, e.gone); o != nil && !sel.fieldsMatch(o.Name, o.Namespace) {
		return api.ObjectEvent{}, false
	}
	prevIn := e.existed && sel.labelsMatch(e.labels)
	curIn := e.cur != nil && sel.labelsMatch(e.cur.Labels)
	switch {
	case curIn && prevIn:
		return api.ObjectEvent{Type: api.Modified, Object: e.cur}, true
	case curIn:
		return api.ObjectEvent{Type: api.Added, Object: e.cur}, true
	case prevIn && e.cur != nil:
		return api.ObjectEvent{Type: api.Deleted, Object: e.cur}, true // left the selection
	case prevIn:
		return api.ObjectEvent{Type: api.Deleted, Object: e.gone}, true
	}
	return api.ObjectEvent{}, false
}

// withRaw sets ev.Raw to the shared JSON of its object, one of the entry's,
// making it when no watcher has yet. Raw stays nil when the object does not
// marshal: the caller's own marshal then reports why.
func (e *entry) withRaw(ev api.ObjectEvent) api.ObjectEvent {
	switch {
	case ev.Object == e.cur && e.curEnc != nil:
		ev.Raw = e.curEnc.json()
	case ev.Object == e.gone && e.goneEnc != nil:
		ev.Raw = e.goneEnc.json()
	}
	return ev
}

// cache prepares the entry's encodings, counted in bytes while the entry is
// in the ring. Call it once, before the entry enters the ring.
func (e *entry) cache(bytes *atomic.Int64) {
	if e.cur != nil {
		e.curEnc = &encoding{obj: e.cur, bytes: bytes}
	}
	if e.gone != nil {
		e.goneEnc = &encoding{obj: e.gone, bytes: bytes}
	}
}

// uncache takes the entry's encodings out of the ring's byte count, as the
// entry leaves the ring. Call it once, with the ring's lock held.
func (e *entry) uncache() {
	for _, en := range []*encoding{e.curEnc, e.goneEnc} {
		if en != nil {
			en.forget()
		}
	}
}

// cmpOr returns a when it is not nil, else b.
func cmpOr(a, b *api.Object) *api.Object {
	if a != nil {
		return a
	}
	return b
}

// States of an encoding in the cache's byte count.
const (
	encPending   int32 = iota // not made yet, or its object is still in the ring
	encCharged                // made while its object was in the ring: counted
	encForgotten              // its object left the ring first: never counted
)

// encoding memoizes the JSON of one shared object.
type encoding struct {
	obj   *api.Object
	bytes *atomic.Int64 // the cache's byte count, charged with raw
	once  sync.Once
	raw   json.RawMessage // nil when obj does not marshal
	state atomic.Int32
}

// json returns json.Marshal(obj), made by the first caller and shared by
// every later one: it must not be modified. It is nil when obj does not
// marshal.
func (en *encoding) json() json.RawMessage {
	en.once.Do(func() {
		raw, err := json.Marshal(en.obj)
		if err != nil {
			return
		}
		en.raw = raw
		if en.state.CompareAndSwap(encPending, encCharged) {
			en.bytes.Add(int64(len(raw)))
		}
	})
	return en.raw
}

// forget takes the JSON out of the cache's byte count, or keeps it from
// ever entering it, once the object has left the ring. Call it once.
func (en *encoding) forget() {
	if !en.state.CompareAndSwap(encPending, encForgotten) {
		en.bytes.Add(-int64(len(en.raw))) // charged: raw is set
	}
}

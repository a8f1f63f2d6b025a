package registry

import (
	"bytes"
	"encoding/json"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"cairn.dev/cairn/api"
)

// The managed fields of a create, remembered by the created object's shape.
//
// A create records one managed fields entry: its manager owns every field
// the object sets (FieldsV1), as of the create's second. The set is a
// function of the object's paths alone as long as the object holds no
// list: maps and structs contribute their keys, scalars are leaves, and no
// value is part of a path (only the keys of associative lists and the
// values of sets are, and both are lists). Every kind is typed (Define),
// so the values of a created object fit the schema the field manager
// checks them against. Hence two list-free creates of one kind with the
// same keys at the same places, and the same nulls, record the same
// fields: the field manager runs for the first of each shape, and the
// creates after it copy its entry, with their own manager and second, and
// have their fields re-encoded as the field manager's unstructured round
// trip re-encodes them (keys sorted), so that they are stored byte for byte
// as before.
// An object with a list, with managed fields of its own (which the field
// manager would merge), or with a long shape always takes the field
// manager.

// maxCreateShapes bounds the shapes remembered per registry (beyond it,
// new shapes take the field manager every time); maxShapeBytes bounds one
// shape.
const (
	maxCreateShapes = 1024
	maxShapeBytes   = 4096
)

// createShapes remembers, per kind and shape, the one managed fields entry
// the field manager recorded for a create (nil: it recorded none).
type createShapes struct {
	mu sync.Mutex
	m  map[createShapeKey]*metav1.ManagedFieldsEntry
}

type createShapeKey struct{ kind, shape string }

// lookup returns the entry remembered for a create of kind with shape.
func (c *createShapes) lookup(kind, shape string) (*metav1.ManagedFieldsEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[createShapeKey{kind, shape}]
	return e, ok
}

// remember keeps what the field manager recorded for a create of kind with
// shape (out's managed fields), when it is at most one entry.
func (c *createShapes) remember(kind, shape string, out *api.Object) {
	if len(out.ManagedFields) > 1 {
		return
	}
	var e *metav1.ManagedFieldsEntry
	if len(out.ManagedFields) == 1 {
		e = out.ManagedFields[0].DeepCopy()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[createShapeKey]*metav1.ManagedFieldsEntry{}
	}
	if len(c.m) < maxCreateShapes {
		c.m[createShapeKey{kind, shape}] = e
	}
}

// createdBy returns obj as the field manager returns a create by manager
// now that it recorded as e (nil: no entry): the entry with manager and
// the second of now (decoded as metav1.Time decodes it), and the fields
// but metadata as its unstructured JSON round trip leaves them
// (sameAsUnstructured). ok is false when a field does not decode.
func createdBy(obj *api.Object, e *metav1.ManagedFieldsEntry, manager string, now time.Time) (*api.Object, bool) {
	fields, ok := sameAsUnstructured(obj.Fields)
	if !ok {
		return nil, false
	}
	obj.Fields, obj.ManagedFields = fields, nil
	if e == nil {
		return obj, true
	}
	entry := *e.DeepCopy()
	entry.Manager = manager
	entry.Time = &metav1.Time{Time: time.Unix(now.Unix(), 0).Local()}
	obj.ManagedFields = []metav1.ManagedFieldsEntry{entry}
	return obj, true
}

// sameAsUnstructured returns fields as a round trip through an
// unstructured object leaves them: each decoded as unstructured JSON
// (integers as int64, other numbers as float64) and encoded again (keys
// sorted), null ones dropped, nil when none is left. ok is false when a
// field does not decode. It does not modify fields.
func sameAsUnstructured(fields map[string]json.RawMessage) (map[string]json.RawMessage, bool) {
	var out map[string]json.RawMessage
	for name, raw := range fields {
		var v any
		if err := utiljson.Unmarshal(raw, &v); err != nil {
			return nil, false
		}
		if v == nil {
			continue
		}
		enc, err := json.Marshal(v)
		if err != nil {
			return nil, false
		}
		if out == nil {
			out = make(map[string]json.RawMessage, len(fields))
		}
		out[name] = enc
	}
	return out, true
}

// createShape returns the shape of obj for createShapes: its JSON with
// every scalar value but null replaced by 0, keys and nesting kept. ok is
// false when obj holds a list or managed fields, when it does not encode,
// or when its shape is longer than maxShapeBytes. It does not modify obj.
func createShape(obj *api.Object) (shape string, ok bool) {
	if len(obj.ManagedFields) > 0 {
		return "", false
	}
	raw, err := obj.MarshalJSON()
	if err != nil {
		return "", false
	}
	return jsonShape(raw)
}

// jsonShape returns the shape of the JSON document raw (see createShape);
// ok is false when raw holds an array, is not valid JSON as far as the
// shape goes, or its shape exceeds maxShapeBytes. Object keys are copied
// as they are written (an encoder writes them one way).
func jsonShape(raw []byte) (string, bool) {
	var b bytes.Buffer
	afterKey := false // the next string is a value, not a key
	depth := 0
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case ' ', '\t', '\n', '\r':
		case '[', ']':
			return "", false
		case '{':
			depth++
			afterKey = false
			b.WriteByte(c)
		case '}':
			depth--
			b.WriteByte(c)
		case ':':
			afterKey = true
			b.WriteByte(c)
		case ',':
			afterKey = false
			b.WriteByte(c)
		case '"':
			end, ok := stringEnd(raw, i)
			if !ok {
				return "", false
			}
			if afterKey {
				b.WriteByte('0')
			} else {
				b.Write(raw[i : end+1])
			}
			afterKey, i = false, end
		case 'n':
			if !bytes.HasPrefix(raw[i:], []byte("null")) {
				return "", false
			}
			b.WriteByte('n')
			afterKey, i = false, i+3
		default: // a number, true or false
			for i+1 < len(raw) && !bytes.ContainsRune([]byte(",}] \t\n\r"), rune(raw[i+1])) {
				i++
			}
			b.WriteByte('0')
			afterKey = false
		}
		if b.Len() > maxShapeBytes {
			return "", false
		}
	}
	return b.String(), depth == 0
}

// stringEnd returns the index of the quote that closes the JSON string
// opening at raw[start].
func stringEnd(raw []byte, start int) (int, bool) {
	for i := start + 1; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++
		case '"':
			return i, true
		}
	}
	return 0, false
}

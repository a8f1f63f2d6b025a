package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Object is the generic form of any cairn object: type and object metadata
// plus the kind's other top-level fields (spec, status, data, ...) kept as raw
// JSON. The store, the registry, the server, the garbage collector and the
// CLI handle every kind through it; typed kinds convert with Into and
// FromResource.
//
// Objects handed out by caches are shared: call DeepCopy before modifying one.
type Object struct {
	TypeMeta
	ObjectMeta
	// Fields holds every top-level field but apiVersion, kind and metadata.
	Fields map[string]json.RawMessage
}

// Reserved top-level field names.
const (
	FieldStatus = "status"
	FieldSpec   = "spec"
)

// MarshalJSON writes apiVersion, kind, metadata and the other fields in
// one flat JSON object, keys sorted after the metadata.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	enc := func(k string, v any) error {
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return writeField(&b, k, raw)
	}
	if o.APIVersion != "" {
		if err := enc("apiVersion", o.APIVersion); err != nil {
			return nil, err
		}
	}
	if o.Kind != "" {
		if err := enc("kind", o.Kind); err != nil {
			return nil, err
		}
	}
	if err := enc("metadata", &o.ObjectMeta); err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(o.Fields)) {
		v := o.Fields[k]
		if len(v) == 0 {
			continue
		}
		if err := writeField(&b, k, v); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeField(b *bytes.Buffer, k string, raw json.RawMessage) error {
	if b.Len() > 1 {
		b.WriteByte(',')
	}
	key, err := json.Marshal(k)
	if err != nil {
		return err
	}
	b.Write(key)
	b.WriteByte(':')
	b.Write(raw)
	return nil
}

// UnmarshalJSON reads a flat JSON object. It rejects a body that is not a
// JSON object and a metadata field that does not decode.
func (o *Object) UnmarshalJSON(data []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return err
	}
	if top == nil {
		return fmt.Errorf("object must be a JSON object, not null")
	}
	if err := checkFieldNames(top); err != nil {
		return err
	}
	*o = Object{}
	if v, ok := top["apiVersion"]; ok {
		if err := json.Unmarshal(v, &o.APIVersion); err != nil {
			return fmt.Errorf("apiVersion: %w", err)
		}
		delete(top, "apiVersion")
	}
	if v, ok := top["kind"]; ok {
		if err := json.Unmarshal(v, &o.Kind); err != nil {
			return fmt.Errorf("kind: %w", err)
		}
		delete(top, "kind")
	}
	if v, ok := top["metadata"]; ok {
		if err := json.Unmarshal(v, &o.ObjectMeta); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		delete(top, "metadata")
	}
	for k, v := range top {
		if string(v) == "null" {
			delete(top, k)
		}
	}
	if len(top) > 0 {
		o.Fields = top
	}
	return nil
}

// reservedFields are the top-level names with a meaning of their own.
var reservedFields = []string{"apiVersion", "kind", "metadata", FieldStatus}

// checkFieldNames rejects top-level names that differ only in case, and
// misspelled reserved names: decoding into Go structs matches names
// case-insensitively, so "Metadata" would otherwise override the metadata
// the server checked.
func checkFieldNames(top map[string]json.RawMessage) error {
	folded := make(map[string]string, len(top))
	for _, k := range slices.Sorted(maps.Keys(top)) {
		l := strings.ToLower(k)
		if prev, dup := folded[l]; dup {
			return fmt.Errorf("fields %s and %s differ only in case: field names are case-sensitive", fieldName(prev), fieldName(k))
		}
		folded[l] = k
	}
	for _, r := range reservedFields {
		if k, ok := folded[strings.ToLower(r)]; ok && k != r {
			return fmt.Errorf("unknown field %s: did you mean %s? (field names are case-sensitive)", fieldName(k), r)
		}
	}
	return nil
}

// fieldName shows a field name from a request in an error message: as it
// is when it is a plain identifier, else quoted and truncated.
func fieldName(k string) string {
	plain := k != "" && len(k) <= 64 && strings.IndexFunc(k, func(r rune) bool {
		return !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0
	if plain {
		return k
	}
	if len(k) > 64 {
		k = k[:64] + "..."
	}
	return fmt.Sprintf("%q", k)
}

// DeepCopy returns an independent copy.
func (o *Object) DeepCopy() *Object {
	if o == nil {
		return nil
	}
	c := &Object{TypeMeta: o.TypeMeta, ObjectMeta: *o.ObjectMeta.DeepCopy()}
	if o.Fields != nil {
		c.Fields = make(map[string]json.RawMessage, len(o.Fields))
		for k, v := range o.Fields {
			c.Fields[k] = slices.Clone(v)
		}
	}
	return c
}

// DeepCopy returns an independent copy of the metadata.
func (m *ObjectMeta) DeepCopy() *ObjectMeta {
	c := *m
	if m.DeletionTimestamp != nil {
		t := *m.DeletionTimestamp
		c.DeletionTimestamp = &t
	}
	c.Labels = maps.Clone(m.Labels)
	c.Annotations = maps.Clone(m.Annotations)
	c.Finalizers = slices.Clone(m.Finalizers)
	c.OwnerReferences = slices.Clone(m.OwnerReferences)
	if m.ManagedFields != nil {
		c.ManagedFields = make([]metav1.ManagedFieldsEntry, len(m.ManagedFields))
		for i := range m.ManagedFields {
			m.ManagedFields[i].DeepCopyInto(&c.ManagedFields[i])
		}
	}
	return &c
}

// Into decodes the object into a typed kind (or any struct).
func (o *Object) Into(v any) error {
	raw, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}

// FromResource converts a typed kind into the generic form.
func FromResource(r any) (*Object, error) {
	if o, ok := r.(*Object); ok {
		return o.DeepCopy(), nil
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	// UnmarshalJSON itself: json.Unmarshal would check raw, which
	// json.Marshal just made, once more before decoding it.
	o := &Object{}
	if err := o.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return o, nil
}

// SameJSON reports whether a and b hold the same JSON value, whatever
// their spacing and the order of their object keys; false when either is
// not JSON (nothing included).
func SameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// Field returns the raw value of a top-level field, or nil.
func (o *Object) Field(name string) json.RawMessage { return o.Fields[name] }

// SetField sets (or, with a nil value, removes) a top-level field.
func (o *Object) SetField(name string, v json.RawMessage) {
	if len(v) == 0 || string(v) == "null" {
		delete(o.Fields, name)
		return
	}
	if o.Fields == nil {
		o.Fields = map[string]json.RawMessage{}
	}
	o.Fields[name] = v
}

// Lookup walks a dotted path such as ".status.phase" or "metadata.name"
// through the object's JSON and returns the value found, or nil.
func (o *Object) Lookup(path string) any {
	raw, err := json.Marshal(o)
	if err != nil {
		return nil
	}
	var cur any
	if err := json.Unmarshal(raw, &cur); err != nil {
		return nil
	}
	for _, part := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		if part == "" {
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

// List is a list of objects of one kind.
type List struct {
	TypeMeta
	ListMeta `json:"metadata"`
	Items    []*Object `json:"items"`
}

// Watch event types.
const (
	Added    = "ADDED"
	Modified = "MODIFIED"
	Deleted  = "DELETED"
	Bookmark = "BOOKMARK"
	Error    = "ERROR"
)

// WatchEvent is one line of a watch stream. For BOOKMARK the object carries
// only metadata.resourceVersion; for ERROR it is a Status.
type WatchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// ListKind returns the kind of a list of kind ("Secret" → "SecretList").
func ListKind(kind string) string { return kind + "List" }

// Plural returns the URL resource name of a kind ("DeployItem" → "deployitems").
func Plural(kind string) string { return strings.ToLower(kind) + "s" }

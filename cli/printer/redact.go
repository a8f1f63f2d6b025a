package printer

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/column"
)

// A kind declares its sensitive fields (api.KindInfo.Sensitive, from
// discovery): top-level fields whose values are secret. Of those, tables,
// listings, watches and `describe` show the keys and the size of each
// value, never a value.

// IsSensitive reports whether the dotted path (".data.password",
// "stringData") lies inside one of the sensitive top-level fields.
func IsSensitive(sensitive []string, path string) bool { return column.IsSensitive(sensitive, path) }

// Hidden is what may be shown of a sensitive field.
type Hidden struct {
	// Sizes holds the byte size of each value by key when the field is an
	// object; it is nil otherwise.
	Sizes map[string]int
	// Size is the byte size of the whole value when the field is not an
	// object.
	Size int
}

// Hide returns what may be shown of obj's top-level field, and false when
// obj has no such field (or it is null). The size of a string is its
// length; the values of a field named "data" are base64-encoded bytes by
// the API's convention (a Secret's data), and their size is that of the
// decoded bytes. Other values count as the length of their JSON.
func Hide(obj *api.Object, field string) (Hidden, bool) {
	raw := obj.Field(field)
	if len(raw) == 0 || string(raw) == "null" {
		return Hidden{}, false
	}
	base64Values := field == "data"
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err == nil && m != nil {
		sizes := make(map[string]int, len(m))
		for k, v := range m {
			sizes[k] = size(v, base64Values)
		}
		return Hidden{Sizes: sizes}, true
	}
	return Hidden{Size: size(raw, base64Values)}, true
}

// size is the byte size of one JSON value, as Hide describes.
func size(raw json.RawMessage, base64Value bool) int {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return len(bytes.TrimSpace(raw))
	}
	if base64Value {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			return len(b)
		}
	}
	return len(s)
}

// Redact returns obj with the values of the sensitive fields replaced by
// their sizes ("<redacted: 12 bytes>"), keeping their keys. obj itself is
// not changed; with nothing to redact, obj itself comes back.
func Redact(obj *api.Object, sensitive []string) *api.Object {
	c := obj
	for _, f := range sensitive {
		h, ok := Hide(obj, f)
		if !ok {
			continue
		}
		var red any = redacted(h.Size)
		if h.Sizes != nil {
			m := make(map[string]string, len(h.Sizes))
			for k, n := range h.Sizes {
				m[k] = redacted(n)
			}
			red = m
		}
		raw, err := marshal(red)
		if err != nil {
			raw = json.RawMessage(`"<redacted>"`) // a map of strings always encodes
		}
		if c == obj {
			c = obj.DeepCopy()
		}
		c.SetField(f, raw)
	}
	return c
}

func redacted(n int) string { return fmt.Sprintf("<redacted: %d bytes>", n) }

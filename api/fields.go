package api

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// FieldNames returns the JSON names of the fields of struct type t (or of
// the struct a pointer type points to), in declaration order, as
// encoding/json reads them: a field tagged "-" is skipped and an embedded
// struct without a JSON name is inlined. Field names are case-sensitive in
// cairn: a name that differs from one of these only in case is unknown.
func FieldNames(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" && f.Anonymous {
			out = append(out, FieldNames(f.Type)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// MetadataFields returns the JSON names of ObjectMeta's fields: every name
// metadata may hold.
func MetadataFields() []string { return FieldNames(reflect.TypeFor[ObjectMeta]()) }

// NewUnknownField reports a field name that is not among known, the names
// allowed where it appears: path is the field's full path
// ("metadata.Labels"), name its last part ("Labels"), and where says what
// holds it ("metadata", "a Secret"), to start a sentence. A name that differs from a known one
// only in case is pointed to that one. The message lists the known names
// and never a value. It is a BadRequest whose cause names path.
func NewUnknownField(path, name string, known []string, where string) *Status {
	fields := fmt.Sprintf("has the fields %s (names are case-sensitive)", strings.Join(known, ", "))
	msg := fmt.Sprintf("unknown field: %s %s", where, fields)
	if k, ok := CaseVariant(name, known); ok {
		msg = fmt.Sprintf("unknown field: did you mean %s? %s %s", k, upperFirst(where), fields)
	}
	p := ShowPath(path)
	st := NewBadRequest("%s: %s", p, msg)
	st.Details = &StatusDetails{Causes: []StatusCause{{Field: p, Type: "FieldValueNotSupported", Message: msg}}}
	return st
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// CaseVariant returns the name among known that equals name but for case,
// when name itself is not known.
func CaseVariant(name string, known []string) (string, bool) {
	if slices.Contains(known, name) {
		return "", false
	}
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k, true
		}
	}
	return "", false
}

// ShowPath shows a field path taken from a request in an error message: as
// it is when it is short and printable, else quoted (control characters
// escaped) and cut at 128 bytes.
func ShowPath(p string) string {
	plain := len(p) <= 128 && strings.IndexFunc(p, func(r rune) bool {
		return !unicode.IsPrint(r) || r == '"' || r == '\\'
	}) < 0
	if plain {
		return p
	}
	if len(p) > 128 {
		p = strings.ToValidUTF8(p[:128], "") + "..."
	}
	return strconv.Quote(p)
}

package registry

import (
	"reflect"
	"strings"

	"cairn.dev/cairn/api"
)

// fieldsAt returns the JSON field names allowed at path in a value of Go
// type t: path is a strict decoding error's field path ("spec.Selector",
// "spec.items[0].nmae"), whose last part is the unknown name. It follows
// struct fields by JSON name, slice and array elements ("[n]") and map
// values (any key); it returns nil when the path leaves the type or the
// last part's holder is not a struct.
func fieldsAt(t reflect.Type, path string) []string {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		name, idx, _ := strings.Cut(p, "[")
		if t = deref(t); t.Kind() == reflect.Map {
			t = t.Elem()
		} else if t = structField(t, name); t == nil {
			return nil
		}
		for ; idx != ""; _, idx, _ = strings.Cut(idx, "[") {
			if t = deref(t); t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
				return nil
			}
			t = t.Elem()
		}
	}
	if t = deref(t); t.Kind() != reflect.Struct {
		return nil
	}
	return api.FieldNames(t)
}

// deref strips pointers from t.
func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// structField returns the type of the field of struct t whose JSON name is
// name (embedded structs without a name inlined), or nil.
func structField(t reflect.Type, name string) reflect.Type {
	if t.Kind() != reflect.Struct {
		return nil
	}
	for f := range t.Fields() {
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
		case tag == "" && f.Anonymous:
			if ft := structField(deref(f.Type), name); ft != nil {
				return ft
			}
		case tag == name || tag == "" && f.IsExported() && f.Name == name:
			return f.Type
		}
	}
	return nil
}

// suggest returns the name among known that name most likely misspells: a
// variant in case, else the one closest by edit distance when at most two
// edits (and fewer than a third of name) apart, uniquely.
func suggest(name string, known []string) (string, bool) {
	if k, ok := api.CaseVariant(name, known); ok {
		return k, true
	}
	best, bestD, ties := "", 3, 0
	for _, k := range known {
		d := editDistance(strings.ToLower(name), strings.ToLower(k))
		switch {
		case d < bestD:
			best, bestD, ties = k, d, 0
		case d == bestD:
			ties++
		}
	}
	if best == "" || ties > 0 || bestD*3 > len(name) {
		return "", false
	}
	return best, true
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

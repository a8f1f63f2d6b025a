package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"cairn.dev/cairn/deployer/kube/config"
)

// ErrPathNotFound: a JSONPath names nothing in the object.
var ErrPathNotFound = errors.New("kube: JSONPath names nothing")

// Lookup returns the value at path in obj (an object as decoded from
// JSON): a single value, or a list when the path names several. Errors:
// the path does not parse, or ErrPathNotFound (wrapped, naming the path).
func Lookup(obj map[string]any, path string) (any, error) {
	jp, err := config.ParsePath(path)
	if err != nil {
		return nil, fmt.Errorf("JSONPath %q does not parse: %w", path, err)
	}
	res, err := jp.FindResults(obj)
	if err != nil {
		return nil, fmt.Errorf("%w: %s (%v)", ErrPathNotFound, path, err)
	}
	var vals []any
	for _, set := range res {
		for _, v := range set {
			vals = append(vals, plain(v))
		}
	}
	switch len(vals) {
	case 0:
		return nil, fmt.Errorf("%w: %s", ErrPathNotFound, path)
	case 1:
		return vals[0], nil
	}
	return vals, nil
}

// plain unwraps a reflect.Value of a decoded JSON value.
func plain(v reflect.Value) any {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

// sameJSON reports whether a (a decoded value) and b (raw JSON) are the
// same JSON value; numbers compare by value whatever their Go type.
func sameJSON(a any, b json.RawMessage) bool {
	ra, err := json.Marshal(a)
	if err != nil {
		return false
	}
	var x, y any
	if json.Unmarshal(ra, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

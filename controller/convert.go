package controller

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	"cairn.dev/cairn/api"
)

// Decode converts obj, usually read from an informer cache, into a new T
// that shares nothing with it: a copy of its type and metadata, and its
// other fields (spec, status, ...) decoded from their raw JSON. It gives
// what obj.Into gives a new T, at a fraction of the cost: the metadata,
// already decoded, is copied rather than encoded and decoded again, which
// counts when reconcilers decode every object they look at. The error is
// one of encoding/json's, for a field that does not fit T.
func Decode[T api.Resource](obj *api.Object) (T, error) {
	t := reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
	*t.GetTypeMeta() = obj.TypeMeta
	*t.GetObjectMeta() = *obj.ObjectMeta.DeepCopy()
	if len(obj.Fields) == 0 {
		return t, nil
	}
	n := 2
	for k, v := range obj.Fields {
		n += len(k) + len(v) + 4
	}
	buf := make([]byte, 0, n)
	buf = append(buf, '{')
	for k, v := range obj.Fields {
		if len(buf) > 1 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendQuote(buf, k) // field names are plain identifiers
		buf = append(buf, ':')
		buf = append(buf, v...)
	}
	buf = append(buf, '}')
	if err := json.Unmarshal(buf, t); err != nil {
		var zero T
		return zero, fmt.Errorf("decode %s %q: %w", obj.Kind, api.Key(obj.Namespace, obj.Name), err)
	}
	return t, nil
}

// StatusUpdate is what a status write of r sends: r's type, a copy of its
// metadata and status, encoded; nothing else, since a status write changes
// the status alone (and the resourceVersion in the metadata makes it a
// compare-and-swap). It spares encoding a spec that the write ignores.
func StatusUpdate(r api.Resource, status any) (*api.Object, error) {
	raw, err := json.Marshal(status)
	if err != nil {
		return nil, fmt.Errorf("encode the status of %q: %w", r.GetObjectMeta().Name, err)
	}
	obj := &api.Object{TypeMeta: *r.GetTypeMeta(), ObjectMeta: *r.GetObjectMeta().DeepCopy()}
	obj.SetField(api.FieldStatus, raw)
	return obj, nil
}

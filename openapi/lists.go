package openapi

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// listOverride is the list type of a field of cairn's metadata, whose Go
// declarations carry no marker.
type listOverride struct {
	typ  string
	keys []string
}

// listOverrides are the list types of Kubernetes' ObjectMeta, which
// cairn's follows, by "Type.Field".
var listOverrides = map[string]listOverride{
	"ObjectMeta.Finalizers":      {typ: "set"},
	"ObjectMeta.OwnerReferences": {typ: "map", keys: []string{"uid"}},
}

// listType says how server-side apply merges the list field f of struct
// type owner (x-kubernetes-list-type and -list-map-keys): as the markers
// of the field's comment say ("+listType=map", "+listMapKey=name"), as
// listOverrides say, else as a map keyed by name when the items are
// structs with a required string field "name" (admission keeps names
// unique in every such list), else atomically ("" : the default).
func listType(owner reflect.Type, f reflect.StructField) (string, []string, error) {
	var typ string
	var keys []string
	if owner.PkgPath() == apiPkg {
		key := owner.Name() + "." + f.Name
		for _, m := range apiDocs.Markers[key] {
			switch k, v, _ := strings.Cut(m, "="); k {
			case "listType":
				typ = v
			case "listMapKey":
				keys = append(keys, v)
			}
		}
		if o, ok := listOverrides[key]; ok && typ == "" {
			typ, keys = o.typ, o.keys
		}
	}
	elem := deref(deref(f.Type).Elem())
	if typ == "" && elem.Kind() == reflect.Struct {
		if k, required, ok := jsonField(elem, "name"); ok && required && k.Kind() == reflect.String {
			typ, keys = "map", []string{"name"}
		}
	}
	switch typ {
	case "", "atomic":
	case "set":
		if !scalar(elem) {
			return "", nil, fmt.Errorf("a set holds scalars, not %v", elem)
		}
	case "map":
		if elem.Kind() != reflect.Struct || len(keys) == 0 {
			return "", nil, fmt.Errorf("a list-map holds structs and has keys (listMapKey)")
		}
		for _, k := range keys {
			kt, required, ok := jsonField(elem, k)
			if !ok || !required || !scalar(kt) {
				return "", nil, fmt.Errorf("list-map key %q must be a required scalar field of %v", k, elem)
			}
		}
	default:
		return "", nil, fmt.Errorf("unknown list type %q", typ)
	}
	return typ, keys, nil
}

// jsonField finds the field of struct type t whose JSON name is name, and
// reports its type and whether it is required (always written).
func jsonField(t reflect.Type, name string) (reflect.Type, bool, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		n, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && n == "" && deref(f.Type).Kind() == reflect.Struct {
			if ft, req, ok := jsonField(deref(f.Type), name); ok {
				return ft, req, true
			}
			continue
		}
		if n == "" {
			n = f.Name
		}
		if tag == "-" || !f.IsExported() || n != name {
			continue
		}
		os := strings.Split(opts, ",")
		return deref(f.Type), !slices.Contains(os, "omitempty") && !slices.Contains(os, "omitzero"), true
	}
	return nil, false, false
}

func scalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

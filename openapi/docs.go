package openapi

//go:generate go run ./internal/gendocs -src ../api -out zz_generated.docs.go

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Descriptions come from the doc comments of package api (apiDocs,
// generated), and for other types from their SwaggerDoc method, as
// Kubernetes' own types carry one. A field without a doc comment takes,
// in order: fallbackDocs; the description of the field of the same JSON
// name in the Kubernetes metadata type of the same name (ObjectMeta,
// OwnerReference, ListMeta, TypeMeta, ManagedFieldsEntry), whose shape
// cairn's follow; the doc of its type.

// fallbackDocs describe the fields of cairn's metadata whose Go
// declarations carry no comment, by "Type.Field".
var fallbackDocs = map[string]string{
	"ObjectMeta.Name": "Name is unique among the objects of a kind in a namespace (among all of them for a cluster-scoped kind). " +
		"It is set at creation and never changes.",
	"ObjectMeta.GenerateName": "GenerateName, when name is empty at creation, asks the server for a unique name: " +
		"this prefix followed by random characters.",
	"ObjectMeta.Namespace":         "Namespace is the namespace of a namespaced object; empty for cluster-scoped kinds. It never changes.",
	"ObjectMeta.CreationTimestamp": "CreationTimestamp is when the object was created (server-set, RFC 3339).",
	"ObjectMeta.Labels": "Labels are key/value pairs by which objects are selected (labelSelector) and grouped. " +
		"Keys are qualified names, values label values.",
	"ObjectMeta.Annotations": "Annotations are key/value pairs for tools and controllers to record what they need; " +
		"they are not selectable.",
	"ObjectMeta.Finalizers": "Finalizers must all be removed before an object marked for deletion goes away; " +
		"each names the component that removes it, is a qualified name and appears once.",
	"ObjectMeta.OwnerReferences": "OwnerReferences name the objects this one depends on, each once (by uid): " +
		"the garbage collector deletes the object once its owners are gone.",
}

// kubeDocs are the descriptions of the Kubernetes metadata types whose
// shape cairn's metadata types follow, by type name.
var kubeDocs = map[string]map[string]string{
	"TypeMeta":           metav1.TypeMeta{}.SwaggerDoc(),
	"ObjectMeta":         metav1.ObjectMeta{}.SwaggerDoc(),
	"OwnerReference":     metav1.OwnerReference{}.SwaggerDoc(),
	"ListMeta":           metav1.ListMeta{}.SwaggerDoc(),
	"ManagedFieldsEntry": metav1.ManagedFieldsEntry{}.SwaggerDoc(),
}

// typeDoc describes the named type t.
func typeDoc(t reflect.Type) string {
	if t.Name() == "" {
		return ""
	}
	if t.PkgPath() == apiPkg {
		if d := apiDocs.Types[t.Name()]; d != "" {
			return d
		}
		return kubeDocs[t.Name()][""]
	}
	return swaggerDoc(t)[""]
}

// fieldDoc describes field f (JSON name name) of struct type owner.
func fieldDoc(owner reflect.Type, f reflect.StructField, name string) string {
	if owner.PkgPath() == apiPkg {
		key := owner.Name() + "." + f.Name
		for _, d := range []string{apiDocs.Fields[key], fallbackDocs[key], kubeDocs[owner.Name()][name]} {
			if d != "" {
				return d
			}
		}
	} else if d := swaggerDoc(owner)[name]; d != "" {
		return d
	}
	return typeDoc(elemType(f.Type))
}

// swaggerDoc returns the descriptions of a Kubernetes type ("" for the
// type, JSON names for its fields), or nil.
func swaggerDoc(t reflect.Type) map[string]string {
	if d, ok := reflect.Zero(t).Interface().(interface{ SwaggerDoc() map[string]string }); ok {
		return d.SwaggerDoc()
	}
	return nil
}

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

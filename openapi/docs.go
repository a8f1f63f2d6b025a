package openapi

//go:generate go run ./internal/gendocs -src ../api -out zz_generated.docs.go

import (
	"reflect"

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

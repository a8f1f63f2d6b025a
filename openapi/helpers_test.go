package openapi_test

import (
	"testing"

	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/openapi"
	"cairn.dev/cairn/registry"
)

// resources describes every kind cairn serves, as the server does.
func resources(ks []registry.Kind) []openapi.Resource {
	rs := make([]openapi.Resource, 0, len(ks))
	for _, k := range ks {
		r := openapi.Resource{Info: k.KindInfo, Type: k.GoType}
		for _, a := range k.Actions {
			r.Actions = append(r.Actions, openapi.Action{Name: a.Name, Method: a.Method, Collection: a.Collection})
		}
		rs = append(rs, r)
	}
	return rs
}

// build builds the spec of every kind of kinds.All.
func build(t testing.TB) *openapi.Spec {
	t.Helper()
	s, err := openapi.Build(resources(kinds.All(kinds.Deps{})))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

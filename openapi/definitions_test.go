package openapi_test

import (
	"reflect"
	"testing"

	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/openapi"
)

// TestKindDefinitions_AreBuildsDefinitionsOfTheKinds: the schemas without
// the documents are the documents' schemas.
func TestKindDefinitions_AreBuildsDefinitionsOfTheKinds(t *testing.T) {
	rs := resources(kinds.All(kinds.Deps{}))
	defs, err := openapi.KindDefinitions(rs)
	if err != nil {
		t.Fatal(err)
	}
	full := build(t).Definitions()
	for _, r := range rs {
		name := openapi.DefinitionName(r.Info.Kind)
		if defs[name] == nil || !reflect.DeepEqual(defs[name].Properties, full[name].Properties) {
			t.Errorf("%s: the definition differs from Build's", name)
		}
	}
}

func BenchmarkKindDefinitions(b *testing.B) {
	rs := resources(kinds.All(kinds.Deps{}))
	for b.Loop() {
		if _, err := openapi.KindDefinitions(rs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	rs := resources(kinds.All(kinds.Deps{}))
	for b.Loop() {
		if _, err := openapi.Build(rs); err != nil {
			b.Fatal(err)
		}
	}
}

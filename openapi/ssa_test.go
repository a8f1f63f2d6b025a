package openapi_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/yaml"

	"cairn.dev/cairn/kinds"
)

// objects reads every object of the YAML files matching the patterns.
func objects(t *testing.T, patterns ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, p := range patterns {
		files, err := filepath.Glob(p)
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no files (%v)", p, err)
		}
		for _, f := range files {
			r, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			dec := yaml.NewYAMLOrJSONDecoder(r, 4096)
			for {
				var m map[string]any
				if err := dec.Decode(&m); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				if m != nil {
					out = append(out, &unstructured.Unstructured{Object: m})
				}
			}
			r.Close()
		}
	}
	return out
}

func typeConverter(t *testing.T) managedfields.TypeConverter {
	t.Helper()
	tc, err := managedfields.NewTypeConverter(build(t).Definitions(), false)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// TestSSA_TypeConverterTakesAnObjectOfEveryKind builds the type converter
// of the server-side-apply field manager from Spec.Definitions and
// converts every example object (and stored objects of the kinds the
// examples lack) to a typed value and back, with every kind covered.
func TestSSA_TypeConverterTakesAnObjectOfEveryKind(t *testing.T) {
	tc := typeConverter(t)
	covered := map[string]bool{}
	for _, o := range objects(t, "../examples/*.yaml", "../examples/*/*.yaml", "testdata/*.yaml") {
		tv, err := tc.ObjectToTyped(o)
		if err != nil {
			t.Errorf("%s %s: %v", o.GetKind(), o.GetName(), err)
			continue
		}
		back, err := tc.TypedToObject(tv)
		if err != nil {
			t.Errorf("%s %s: back: %v", o.GetKind(), o.GetName(), err)
			continue
		}
		if !reflect.DeepEqual(back.(*unstructured.Unstructured).Object, o.Object) {
			t.Errorf("%s %s: changed on its way through the typed value", o.GetKind(), o.GetName())
		}
		covered[o.GetKind()] = true
	}
	for _, k := range kinds.All(kinds.Deps{}) {
		if !covered[k.Kind] {
			t.Errorf("no object of kind %s among the examples and testdata", k.Kind)
		}
	}
}

// TestSSA_SchemasAreStrict checks that the schemas describe the fields
// (a typo is an error) while values of arbitrary JSON stay free.
func TestSSA_SchemasAreStrict(t *testing.T) {
	tc := typeConverter(t)
	tests := []struct {
		name    string
		yaml    string
		wantErr string // "" for none
	}{
		{"a field the kind lacks", "kind: Target\nspec: {type: mock, tpye: x}", "tpye"},
		{"a field metadata lacks", "kind: Target\nmetadata: {nmae: x}\nspec: {type: mock}", "nmae"},
		{"a string where a list goes", "kind: Execution\nspec: {deployItems: nope}", "deployItems"},
		{"any JSON in a raw value", "kind: DataObject\ndata: {a: [1, {b: null}], c: x}", ""},
		{"a quantity as a string", "kind: Namespace\nspec: {limits: {bytes: 1Gi}}", ""},
		{"a quantity as a number", "kind: Namespace\nspec: {limits: {bytes: 1024}}", ""},
		{"bytes as base64", "kind: Secret\ndata: {k: dg==}", ""},
		// As kubectl and client-go's typed objects send them.
		{"a null timestamp", "kind: Target\nmetadata: {name: t, creationTimestamp: null}\nspec: {type: mock}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := object(t, tt.yaml)
			_, err := tc.ObjectToTyped(o)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("%v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one naming %q", err, tt.wantErr)
			}
		})
	}
}

// TestSSA_KeyedListsMergeByKey merges what two appliers set, as the field
// manager does: keyed lists (imports by name, owners by uid, finalizers
// as a set) keep both appliers' items; other lists are replaced whole.
func TestSSA_KeyedListsMergeByKey(t *testing.T) {
	tc := typeConverter(t)
	tests := []struct {
		name        string
		first, then string
		path        []string
		want        int // items after the merge
	}{
		{"data imports by name", "kind: Installation\nspec: {imports: {data: [{name: a, value: 1}]}}",
			"kind: Installation\nspec: {imports: {data: [{name: b, value: 2}]}}", []string{"spec", "imports", "data"}, 2},
		{"the same import once", "kind: Installation\nspec: {imports: {data: [{name: a, value: 1}]}}",
			"kind: Installation\nspec: {imports: {data: [{name: a, dataRef: x}]}}", []string{"spec", "imports", "data"}, 1},
		{"blueprint imports by name", "kind: Blueprint\nspec: {imports: [{name: a}]}",
			"kind: Blueprint\nspec: {imports: [{name: b}]}", []string{"spec", "imports"}, 2},
		{"owners by uid", "kind: Target\nmetadata: {ownerReferences: [{kind: Namespace, name: a, uid: u1}]}\nspec: {type: t}",
			"kind: Target\nmetadata: {ownerReferences: [{kind: Namespace, name: a, uid: u2}]}\nspec: {type: t}", []string{"metadata", "ownerReferences"}, 2},
		{"finalizers as a set", "kind: Target\nmetadata: {finalizers: [a, b]}\nspec: {type: t}",
			"kind: Target\nmetadata: {finalizers: [b, c]}\nspec: {type: t}", []string{"metadata", "finalizers"}, 3},
		{"conditions replaced whole", "kind: Cleaner\nspec: {ttl: 1h, conditions: [a, b]}",
			"kind: Cleaner\nspec: {ttl: 1h, conditions: [c]}", []string{"spec", "conditions"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := tc.ObjectToTyped(object(t, tt.first))
			if err != nil {
				t.Fatal(err)
			}
			b, err := tc.ObjectToTyped(object(t, tt.then))
			if err != nil {
				t.Fatal(err)
			}
			merged, err := a.Merge(b)
			if err != nil {
				t.Fatal(err)
			}
			u := merged.AsValue().Unstructured().(map[string]any)
			items, _, err := unstructured.NestedSlice(u, tt.path...)
			if err != nil || len(items) != tt.want {
				t.Errorf("%s: %v (%v), want %d items", strings.Join(tt.path, "."), items, err, tt.want)
			}
		})
	}
	// Two items with one key are refused: the list is a map.
	dup := object(t, "kind: Installation\nspec: {imports: {data: [{name: a, value: 1}, {name: a, value: 2}]}}")
	if _, err := tc.ObjectToTyped(dup); err == nil {
		t.Error("two data imports named a were accepted")
	} else if !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("two data imports named a: %v", err)
	}
}

// object decodes an object of cairn.dev/v1alpha1 from YAML.
func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.NewYAMLOrJSONDecoder(strings.NewReader("apiVersion: cairn.dev/v1alpha1\n"+y), 512).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

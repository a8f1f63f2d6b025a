package registry

import (
	"reflect"
	"testing"

	"cairn.dev/cairn/api"
)

func TestSuggest_NamesTheLikelyField(t *testing.T) {
	known := []string{"ttl", "targets", "period", "conditions"}
	tests := []struct {
		name, want string
	}{
		{"Targets", "targets"},
		{"tagrets", "targets"},
		{"perod", "period"},
		{"bogus", ""},
		{"t", ""},
	}
	for _, tt := range tests {
		got, ok := suggest(tt.name, known)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("suggest(%q) = %q, %v; want %q", tt.name, got, ok, tt.want)
		}
	}
}

func TestFieldsAt_FollowsStructsListsAndMaps(t *testing.T) {
	type item struct {
		Name string `json:"name"`
	}
	type spec struct {
		Items []item            `json:"items"`
		ByKey map[string]*item  `json:"byKey"`
		Meta  api.ObjectMeta    `json:"meta"`
		Plain map[string]string `json:"plain"`
	}
	type obj struct {
		Spec spec `json:"spec"`
	}
	tests := []struct {
		path string
		want []string
	}{
		{"spec.x", []string{"items", "byKey", "meta", "plain"}},
		{"spec.items[3].nmae", []string{"name"}},
		{"spec.byKey.k.nmae", []string{"name"}},
		{"spec.plain.k", nil},
		{"nope.x", nil},
	}
	for _, tt := range tests {
		if got := fieldsAt(reflect.TypeFor[*obj](), tt.path); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("fieldsAt(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

package openapi_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/openapi"
	"cairn.dev/cairn/registry"
)

// The query parameters each action takes, by x-kubernetes-action.
var wantParams = map[string][]string{
	"list": {"allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
		"resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch"},
	"post":             {"dryRun", "fieldManager", "fieldValidation"},
	"put":              {"dryRun", "fieldManager", "fieldValidation"},
	"patch":            {"dryRun", "fieldManager", "fieldValidation", "force"},
	"delete":           {"dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy"},
	"deletecollection": {"continue", "dryRun", "fieldSelector", "gracePeriodSeconds", "labelSelector", "limit", "orphanDependents", "propagationPolicy", "resourceVersion", "resourceVersionMatch", "timeoutSeconds"},
	"get":              nil,
}

func TestBuild_EveryKindHasItsDefinitionsAndPaths(t *testing.T) {
	s := build(t)
	defs := s.V2().Definitions
	for _, k := range kinds.All(kinds.Deps{}) {
		t.Run(k.Kind, func(t *testing.T) {
			for _, kind := range []string{k.Kind, k.Kind + "List"} {
				d, ok := defs[openapi.DefinitionName(kind)]
				if !ok {
					t.Fatalf("no definition %s", openapi.DefinitionName(kind))
				}
				want := []any{map[string]any{"group": api.Group, "version": api.Version, "kind": kind}}
				if got := d.Extensions["x-kubernetes-group-version-kind"]; !reflect.DeepEqual(got, want) {
					t.Errorf("%s: x-kubernetes-group-version-kind %v, want %v", kind, got, want)
				}
			}
			if !slices.Contains(defs[openapi.DefinitionName(k.Kind+"List")].Required, "items") {
				t.Errorf("%sList does not require items", k.Kind)
			}

			base := api.BasePath + "/" + k.Plural
			if k.Namespaced {
				checkPath(t, s.V2(), base, k.Kind, map[string]string{"GET": "list"})
				base = api.BasePath + "/namespaces/{namespace}/" + k.Plural
			}
			checkPath(t, s.V2(), base, k.Kind, map[string]string{"GET": "list", "POST": "post", "DELETE": "deletecollection"})
			checkPath(t, s.V2(), base+"/{name}", k.Kind, map[string]string{"GET": "get", "PUT": "put", "PATCH": "patch", "DELETE": "delete"})
			checkPath(t, s.V2(), base+"/{name}/status", k.Kind, map[string]string{"GET": "get", "PUT": "put", "PATCH": "patch"})
		})
	}
	ids := map[string]string{}
	for path, item := range s.V2().Paths.Paths {
		for _, op := range []*spec.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if op == nil {
				continue
			}
			if other, dup := ids[op.ID]; dup {
				t.Errorf("operation ID %s on %s and %s", op.ID, path, other)
			}
			ids[op.ID] = path
		}
	}
}

// checkPath checks the operations of path: their methods, actions, kind
// and query parameters, and the media types of patches.
func checkPath(t *testing.T, doc *spec.Swagger, path, kind string, actions map[string]string) {
	t.Helper()
	item, ok := doc.Paths.Paths[path]
	if !ok {
		t.Errorf("no path %s", path)
		return
	}
	ops := map[string]*spec.Operation{"GET": item.Get, "POST": item.Post, "PUT": item.Put, "PATCH": item.Patch, "DELETE": item.Delete}
	for method, op := range ops {
		action, want := actions[method]
		if !want {
			if op != nil {
				t.Errorf("%s %s: unexpected", method, path)
			}
			continue
		}
		if op == nil {
			t.Errorf("%s %s: missing", method, path)
			continue
		}
		if got := op.Extensions["x-kubernetes-action"]; got != action {
			t.Errorf("%s %s: action %v, want %s", method, path, got, action)
		}
		if got := op.Extensions["x-kubernetes-group-version-kind"]; !reflect.DeepEqual(got, map[string]any{"group": api.Group, "version": api.Version, "kind": kind}) {
			t.Errorf("%s %s: kind %v, want %s", method, path, got, kind)
		}
		var query []string
		for _, p := range op.Parameters {
			if p.In == "query" {
				query = append(query, p.Name)
			}
		}
		slices.Sort(query)
		if !slices.Equal(query, wantParams[action]) {
			t.Errorf("%s %s: query parameters %v, want %v", method, path, query, wantParams[action])
		}
		if method == http.MethodPatch && !slices.Equal(op.Consumes, []string{"application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"}) {
			t.Errorf("%s %s: consumes %v", method, path, op.Consumes)
		}
	}
}

// TestBuild_DescribesTheJSONForms checks the schemas of fields whose JSON
// form is not their Go type's.
func TestBuild_DescribesTheJSONForms(t *testing.T) {
	defs := build(t).V2().Definitions
	tests := []struct {
		def, field string
		want       string // the field's schema, as JSON, less its description
	}{
		{"DataObject", "data", `{"x-kubernetes-preserve-unknown-fields":true}`},
		{"DeployItemTemplate", "timeout", `{"type":"string"}`},
		{"LeaseSpec", "acquireTime", `{"type":"string","format":"date-time"}`},
		{"ObjectMeta", "deletionTimestamp", `{"type":"string","format":"date-time"}`},
		{"NamespaceLimits", "bytes", `{"x-kubernetes-int-or-string":true}`},
		{"Secret", "data", `{"type":"object","additionalProperties":{"type":"string","format":"byte"}}`},
		{"Secret", "apiVersion", `{"type":"string"}`},
		{"Installation", "metadata", `{"$ref":"#/definitions/dev.cairn.v1alpha1.ObjectMeta"}`},
		{"Installation", "spec", `{"$ref":"#/definitions/dev.cairn.v1alpha1.InstallationSpec"}`},
		{"InstallationImports", "data", `{"type":"array","items":{"$ref":"#/definitions/dev.cairn.v1alpha1.DataImport"},` +
			`"x-kubernetes-list-map-keys":["name"],"x-kubernetes-list-type":"map"}`},
		{"ObjectMeta", "ownerReferences", `{"type":"array","items":{"$ref":"#/definitions/dev.cairn.v1alpha1.OwnerReference"},` +
			`"x-kubernetes-list-map-keys":["uid"],"x-kubernetes-list-type":"map"}`},
		{"ObjectMeta", "finalizers", `{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"set"}`},
		{"CleanerSpec", "conditions", `{"type":"array","items":{"type":"string"}}`},
		{"InstallationStatus", "phase", `{"type":"string","enum":["Init","PendingDependencies","Progressing","Succeeded","Failed","Aborted","Deleting"]}`},
		{"NamespaceUsage", "objects", `{"type":"integer","format":"int64"}`},
		{"CleanerTarget", "includeWhenEvaluating", `{"type":"boolean"}`},
	}
	for _, tt := range tests {
		t.Run(tt.def+"."+tt.field, func(t *testing.T) {
			d, ok := defs[openapi.DefinitionName(tt.def)]
			if !ok {
				t.Fatalf("no definition %s", tt.def)
			}
			f, ok := d.Properties[tt.field]
			if !ok {
				t.Fatalf("no field %s", tt.field)
			}
			if f.Description == "" {
				t.Errorf("no description")
			}
			f.Description = ""
			got, err := json.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	// Required: the fields always written, but metadata.
	for def, want := range map[string][]string{
		"Installation":   {"spec"},
		"DataImport":     {"name"},
		"OwnerReference": {"kind", "name", "uid"},
		"LastError":      {"reason", "message"},
		"Secret":         nil,
	} {
		if got := defs[openapi.DefinitionName(def)].Required; !slices.Equal(got, want) {
			t.Errorf("%s requires %v, want %v", def, got, want)
		}
	}
}

// The Go types of TestBuild_RefusesWhatItCannotDescribe.
type (
	withChan struct {
		api.TypeMeta   `json:",inline"`
		api.ObjectMeta `json:"metadata"`
		C              chan int `json:"c"`
	}
	withIntKeys struct {
		api.TypeMeta   `json:",inline"`
		api.ObjectMeta `json:"metadata"`
		M              map[int]string `json:"m"`
	}
	selfMarshalled  struct{ X int }
	withUnknownJSON struct {
		api.TypeMeta   `json:",inline"`
		api.ObjectMeta `json:"metadata"`
		S              selfMarshalled `json:"s"`
	}
	inner struct {
		A string `json:"a"`
	}
	twice struct {
		api.TypeMeta   `json:",inline"`
		api.ObjectMeta `json:"metadata"`
		inner          `json:",inline"`
		A              string `json:"a"`
	}
	fine struct {
		api.TypeMeta   `json:",inline"`
		api.ObjectMeta `json:"metadata"`
		Spec           struct {
			Self   *fine             `json:"self,omitempty"`
			Any    any               `json:"any,omitempty"`
			Hidden string            `json:"-"`
			Dash   string            `json:"-,"`
			Plain  string            // no tag: the Go name
			Nested map[string][]*int `json:"nested,omitempty"`
			// Kubernetes' own types, as server-side apply's records.
			Managed []metav1.ManagedFieldsEntry `json:"managedFields,omitempty"`
		} `json:"spec"`
	}
)

func (selfMarshalled) MarshalJSON() ([]byte, error) { return []byte(`"x"`), nil }

func TestBuild_RefusesWhatItCannotDescribe(t *testing.T) {
	res := func(kind string, v any) openapi.Resource {
		return openapi.Resource{Info: api.KindInfo{Kind: kind, Plural: strings.ToLower(kind) + "s"}, Type: reflect.TypeOf(v)}
	}
	tests := []struct {
		name    string
		rs      []openapi.Resource
		wantErr string // "" for none
	}{
		{"a channel", []openapi.Resource{res("A", withChan{})}, "no JSON form"},
		{"int map keys", []openapi.Resource{res("A", withIntKeys{})}, "not a string"},
		{"a type marshalling itself", []openapi.Resource{res("A", withUnknownJSON{})}, "marshals itself"},
		{"a JSON name twice", []openapi.Resource{res("A", twice{})}, "used twice"},
		{"a kind twice", []openapi.Resource{res("A", fine{}), res("A", withChan{})}, "described twice"},
		{"a Go type for two kinds", []openapi.Resource{res("A", fine{}), res("B", fine{})}, "another kind"},
		{"not a struct", []openapi.Resource{res("A", "x")}, "must be a struct"},
		{"self reference, any, untagged and dashed fields", []openapi.Resource{res("A", fine{})}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := openapi.Build(tt.rs)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one with %q", err, tt.wantErr)
			case err == nil:
				// A Go type outside package api is named by its package.
				d, ok := s.V2().Definitions["dev.cairn.cairn.openapi_test.fine"]
				if !ok {
					t.Fatalf("no definition of fine: %v", slices.Collect(maps.Keys(s.V2().Definitions)))
				}
				props := d.Properties["spec"].Properties
				if got := slices.Sorted(maps.Keys(props)); !slices.Equal(got, []string{"-", "Plain", "any", "managedFields", "nested", "self"}) {
					t.Errorf("spec properties %v", got)
				}
			}
		})
	}
}

// TestBuild_ActionsArePlainEndpoints describes the Event kind with the
// actions the event service registers: each named one is a path of its
// own, without the extensions kubectl reads; the unnamed ones (create and
// deletecollection with rules of their own) add nothing.
func TestBuild_ActionsArePlainEndpoints(t *testing.T) {
	ev := kinds.EventWith([]registry.Action{
		{Name: "", Method: http.MethodPost, Collection: true},
		{Name: "cancel", Method: http.MethodPost},
		{Name: "cancel", Method: http.MethodPost, Collection: true},
		{Name: "", Method: http.MethodDelete, Collection: true},
		{Name: "jobs", Method: http.MethodPost},
		{Name: "logs", Method: http.MethodGet},
		{Name: "search", Method: http.MethodGet, Collection: true},
	})
	s, err := openapi.Build(resources([]registry.Kind{ev}))
	if err != nil {
		t.Fatal(err)
	}
	base := api.BasePath + "/namespaces/{namespace}/events"
	tests := []struct {
		path, method, id string
	}{
		{base + "/{name}/cancel", "POST", "postCairnDevV1alpha1NamespacedEventCancel"},
		{base + "/cancel", "POST", "postCairnDevV1alpha1CollectionNamespacedEventCancel"},
		{base + "/{name}/jobs", "POST", "postCairnDevV1alpha1NamespacedEventJobs"},
		{base + "/{name}/logs", "GET", "getCairnDevV1alpha1NamespacedEventLogs"},
		{base + "/search", "GET", "getCairnDevV1alpha1CollectionNamespacedEventSearch"},
		{base + "/{name}/trace", "GET", "readCairnDevV1alpha1NamespacedEventTrace"},
	}
	for _, tt := range tests {
		item, ok := s.V2().Paths.Paths[tt.path]
		op := map[string]*spec.Operation{"GET": item.Get, "POST": item.Post}[tt.method]
		if !ok || op == nil {
			t.Errorf("%s %s: missing", tt.method, tt.path)
			continue
		}
		if op.ID != tt.id || len(op.Extensions) != 0 {
			t.Errorf("%s %s: ID %s, extensions %v", tt.method, tt.path, op.ID, op.Extensions)
		}
	}
	checkPath(t, s.V2(), base, api.KindEvent, map[string]string{"GET": "list", "POST": "post", "DELETE": "deletecollection"})
	if _, ok := s.V2().Paths.Paths[base+"/{name}/"]; ok {
		t.Error("an unnamed action made a path")
	}
}

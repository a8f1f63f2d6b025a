package openapi_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi/cached"
	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/spec3"
	explainv2 "k8s.io/kubectl/pkg/explain/v2"
	kubectlopenapi "k8s.io/kubectl/pkg/util/openapi"
	"k8s.io/kubectl/pkg/validation"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/kinds"
	cairnopenapi "cairn.dev/cairn/openapi"
)

// served starts an HTTP server serving the documents of every kind, as
// the API server mounts them, and returns a client config for it.
func served(t *testing.T) *rest.Config {
	t.Helper()
	srv := httptest.NewServer(build(t).Handler())
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

func gvkOf(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: api.Group, Version: api.Version, Kind: kind}
}

// TestClients_KubectlFindsFieldValidationAndDryRunForEveryKind drives
// kubectl's own check (cli-runtime's OpenAPI v3 query-parameter
// verifier, as kubectl create/apply/edit build it): it looks for the
// kind's PATCH operation in the group version's v3 document and for the
// parameter among its parameters. kubectl then leaves field validation to
// the server.
func TestClients_KubectlFindsFieldValidationAndDryRunForEveryKind(t *testing.T) {
	cfg := served(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	oapi := cached.NewClient(dc.OpenAPIV3())
	for _, param := range []resource.VerifiableQueryParam{resource.QueryParamFieldValidation, "dryRun"} {
		v3 := resource.NewQueryParamVerifierV3(dyn, oapi, param)
		v2 := resource.NewQueryParamVerifier(dyn, dc, param)
		for _, k := range kinds.All(kinds.Deps{}) {
			if err := v3.HasSupport(gvkOf(k.Kind)); err != nil {
				t.Errorf("v3: %s %s: %v", k.Kind, param, err)
			}
			if err := v2.HasSupport(gvkOf(k.Kind)); err != nil {
				t.Errorf("v2: %s %s: %v", k.Kind, param, err)
			}
		}
		// A kind the server does not serve is not found (the verifier then
		// asks the server for CRDs, which cairn has none of).
		if err := v3.HasSupport(gvkOf("Unknown")); err == nil {
			t.Errorf("%s: a kind cairn does not serve is supported", param)
		}
	}
}

// TestClients_ClientGoReadsBothDocuments reads the documents as client-go
// does: v2 as protobuf (DiscoveryClient.OpenAPISchema), then as kubectl's
// v2 models index it; v3 through the index (openapi.Client.Paths) and the
// group version's document as JSON and as protobuf.
func TestClients_ClientGoReadsBothDocuments(t *testing.T) {
	cfg := served(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := dc.OpenAPISchema()
	if err != nil {
		t.Fatalf("v2: %v", err)
	}
	models, err := kubectlopenapi.NewOpenAPIData(doc)
	if err != nil {
		t.Fatalf("v2 models: %v", err)
	}
	for _, k := range kinds.All(kinds.Deps{}) {
		if models.LookupResource(gvkOf(k.Kind)) == nil {
			t.Errorf("v2: no model for %s", k.Kind)
		}
		if models.LookupResource(gvkOf(k.Kind+"List")) == nil {
			t.Errorf("v2: no model for %sList", k.Kind)
		}
		// kubectl apply sends a strategic merge patch only where the PATCH
		// operation consumes one; cairn's take a JSON merge patch.
		if c := models.GetConsumes(gvkOf(k.Kind), "PATCH"); len(c) == 0 || slices.Contains(c, "application/strategic-merge-patch+json") {
			t.Errorf("v2: PATCH of %s consumes %v", k.Kind, c)
		}
	}

	paths, err := dc.OpenAPIV3().Paths()
	if err != nil {
		t.Fatalf("v3 index: %v", err)
	}
	gv, ok := paths[cairnopenapi.GroupVersionV3]
	if !ok || len(paths) != 1 {
		t.Fatalf("v3 index: %v, want only %s", keys(paths), cairnopenapi.GroupVersionV3)
	}
	if u := gv.ServerRelativeURL(); !strings.HasPrefix(u, "/openapi/v3/apis/cairn.dev/v1alpha1?hash=") {
		t.Errorf("v3 URL %q, want one with the document's hash", u)
	}
	raw, err := gv.Schema("application/json")
	if err != nil {
		t.Fatalf("v3 document: %v", err)
	}
	var v3 spec3.OpenAPI
	if err := json.Unmarshal(raw, &v3); err != nil {
		t.Fatalf("v3 document: %v", err)
	}
	for _, k := range kinds.All(kinds.Deps{}) {
		if v3.Components.Schemas[cairnopenapi.DefinitionName(k.Kind)] == nil {
			t.Errorf("v3: no schema for %s", k.Kind)
		}
	}
	pb, err := gv.Schema(openapi.ContentTypeOpenAPIV3PB)
	if err != nil || len(pb) == 0 || bytes.Equal(pb, raw) {
		t.Errorf("v3 as protobuf: %d bytes, %v", len(pb), err)
	}
	var v2 openapi_v2.Document
	if err := proto.Unmarshal(mustGet(t, cfg, "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"), &v2); err != nil {
		t.Errorf("v2 under the protobuf type's older name: %v", err)
	}
}

// TestClients_ExplainDescribesTheFields runs `kubectl explain`'s code (its
// plaintext template over the v3 document, fetched as kubectl does).
func TestClients_ExplainDescribesTheFields(t *testing.T) {
	cfg := served(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: api.Group, Version: api.Version, Resource: "installations"}
	tests := []struct {
		name      string
		fields    []string
		recursive bool
		want      []string
	}{
		{"kind", nil, false, []string{
			"GROUP:      cairn.dev", "KIND:       Installation", "VERSION:    v1alpha1",
			"Installation applies a blueprint to its imports.",
			"spec\t<InstallationSpec> -required-", "status\t<InstallationStatus>", "metadata\t<ObjectMeta>",
		}},
		{"spec.imports", []string{"spec", "imports"}, false, []string{
			"FIELD: imports <InstallationImports>",
			"InstallationImports binds a blueprint's imports.",
			"data\t<[]DataImport>", "DataImport binds one data import to exactly one source",
			"targets\t<[]TargetImport>", "TargetImport binds a target import to a Target in the namespace.",
		}},
		{"spec.imports.data", []string{"spec", "imports", "data"}, false, []string{
			"FIELD: data <[]DataImport>",
			"name\t<string> -required-", "secretRef\t<SecretKeyRef>", "value\t<Object>",
		}},
		{"metadata.ownerReferences", []string{"metadata", "ownerReferences"}, false, []string{
			"FIELD: ownerReferences <[]OwnerReference>", "uid\t<string> -required-",
		}},
		{"status.phase", []string{"status", "phase"}, false, []string{
			"FIELD: phase <string>", "ENUM:", "PendingDependencies",
		}},
		// An inline blueprint holds subinstallations holding blueprints:
		// the recursion stops at the cycle.
		{"spec, recursively", []string{"spec"}, true, []string{
			"  blueprint\t<BlueprintReference> -required-", "    inline\t<BlueprintSpec>", "      subinstallations\t<[]SubinstallationTemplate>",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := explainv2.PrintModelDescription(tt.fields, &out, dc.OpenAPIV3(), gvr, tt.recursive, 0, "plaintext"); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("explain installations.%s lacks %q:\n%s", tt.name, w, out.String())
				}
			}
		})
	}
	var out bytes.Buffer
	err = explainv2.PrintModelDescription([]string{"spec", "nonsense"}, &out, dc.OpenAPIV3(), gvr, false, 0, "plaintext")
	if err == nil || !strings.Contains(err.Error(), `field "nonsense" does not exist`) {
		t.Errorf("explain of a field that does not exist: %v", err)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// models serves kubectl's v2 models (what Factory.OpenAPISchema gives).
type models struct{ r kubectlopenapi.Resources }

func (m models) OpenAPISchema() (kubectlopenapi.Resources, error) { return m.r, nil }

// TestClients_KubectlValidation runs kubectl's validation of the objects
// it sends (create, apply, edit): the server validates fields, so kubectl
// leaves strict validation to it; kubectl's own validation against the v2
// schemas (what it falls back to with a server that does not) accepts
// every example and refuses a misspelt field.
func TestClients_KubectlValidation(t *testing.T) {
	cfg := served(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := dc.OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	res, err := kubectlopenapi.NewOpenAPIData(doc)
	if err != nil {
		t.Fatal(err)
	}
	local := validation.NewSchemaValidation(models{res})
	verifier := resource.NewFallbackQueryParamVerifier(
		resource.NewQueryParamVerifierV3(dyn, cached.NewClient(dc.OpenAPIV3()), resource.QueryParamFieldValidation),
		resource.NewQueryParamVerifier(dyn, dc, resource.QueryParamFieldValidation))
	strict := validation.NewParamVerifyingSchema(local, verifier, metav1.FieldValidationStrict)

	typo := []byte("apiVersion: cairn.dev/v1alpha1\nkind: Target\nmetadata: {name: t}\nspec: {type: mock, tpye: x}\n")
	if err := strict.ValidateBytes(typo); err != nil {
		t.Errorf("kubectl validated on the client, not leaving it to the server: %v", err)
	}
	if err := local.ValidateBytes(typo); err == nil || !strings.Contains(err.Error(), "tpye") {
		t.Errorf("a misspelt field: %v", err)
	}
	for _, o := range objects(t, "../examples/*.yaml", "../examples/*/*.yaml", "testdata/*.yaml") {
		b, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := local.ValidateBytes(b); err != nil {
			t.Errorf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

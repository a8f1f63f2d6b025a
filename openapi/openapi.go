// Package openapi describes cairn's API as Kubernetes clients expect it:
// an OpenAPI v2 (Swagger 2.0) document and an OpenAPI v3 document for the
// cairn.dev/v1alpha1 group version, both derived from the kinds' Go types
// and their doc comments, with the paths, operations and query parameters
// the server serves.
//
// kubectl reads them for `kubectl explain`, to learn whether the server
// validates fields and supports dry run (the fieldValidation and dryRun
// parameters of each kind's PATCH operation), and for client-side
// validation; the server-side-apply field manager builds its type
// converter from Spec.Definitions. Build computes everything once, at
// server start; Spec.Handler serves the documents.
//
// The package takes plain data (Resource) so that it never depends on the
// registry or the server.
package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/openapiconv"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"cairn.dev/cairn/api"
)

// The paths Handler serves.
const (
	// PathV2 serves the OpenAPI v2 document, as JSON or protobuf.
	PathV2 = "/openapi/v2"
	// PathV3 serves the OpenAPI v3 index: the group versions and the URLs
	// of their documents.
	PathV3 = "/openapi/v3"
	// GroupVersionV3 is the key of cairn's group version in the v3 index;
	// its document is served at PathV3 + "/" + GroupVersionV3.
	GroupVersionV3 = "apis/" + api.Group + "/" + api.Version
)

// Resource is one kind to describe.
type Resource struct {
	// Info names the kind: its plural, scope and subresources.
	Info api.KindInfo
	// Type is the kind's Go struct (api.Installation for Installation),
	// whose JSON form the schemas describe.
	Type reflect.Type
	// Actions are the kind's extra endpoints.
	Actions []Action
}

// Action is an extra endpoint of a kind: Method on
// .../{plural}/{name}/{Name}, or on .../{plural}/{Name} when Collection.
// An action with no name replaces a standard verb on the collection (a
// create or a deletecollection with rules of its own): it adds no path.
type Action struct {
	Name       string
	Method     string
	Collection bool
}

// Spec is the built description of the API. It is immutable; its methods
// may be called concurrently.
type Spec struct {
	v2 *spec.Swagger
	v3 *spec3.OpenAPI
}

// Build derives the schemas and paths of every resource. It fails when a
// Go type has a field whose JSON form it cannot describe (a type with its
// own JSON marshalling it does not know, a map with non-string keys, a
// channel, ...), when two Go types would share a definition name, when
// two resources share a kind or a plural, or when the documents do not
// encode (the protobuf form included).
func Build(rs []Resource) (*Spec, error) {
	b := newSchemas()
	paths := map[string]spec.PathItem{}
	seen := map[string]bool{}
	for _, r := range rs {
		if r.Type == nil || r.Type.Kind() != reflect.Struct {
			return nil, fmt.Errorf("openapi: kind %s: Type must be a struct type, not %v", r.Info.Kind, r.Type)
		}
		if r.Info.Kind == "" || r.Info.Plural == "" || seen[r.Info.Kind] || seen["/"+r.Info.Plural] {
			return nil, fmt.Errorf("openapi: kind %q (plural %q): empty or described twice", r.Info.Kind, r.Info.Plural)
		}
		seen[r.Info.Kind], seen["/"+r.Info.Plural] = true, true
		if err := b.kind(r.Info.Kind, r.Type); err != nil {
			return nil, fmt.Errorf("openapi: kind %s: %w", r.Info.Kind, err)
		}
		addPaths(paths, r)
	}
	if err := b.commonTypes(); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	v2 := &spec.Swagger{
		SwaggerProps: spec.SwaggerProps{
			Swagger: "2.0",
			Info: &spec.Info{InfoProps: spec.InfoProps{
				Title:       "cairn",
				Description: "The " + api.APIVersion + " API of cairn, a declarative control plane.",
				Version:     api.Version,
			}},
			Paths:       &spec.Paths{Paths: paths},
			Definitions: b.defs,
			SecurityDefinitions: spec.SecurityDefinitions{
				"BearerToken": {SecuritySchemeProps: spec.SecuritySchemeProps{
					Type: "apiKey", Name: "authorization", In: "header",
					Description: "Bearer token authentication: `Authorization: Bearer <token>`.",
				}},
			},
			Security: []map[string][]string{{"BearerToken": {}}},
		},
	}
	v3 := openapiconv.ConvertV2ToV3(v2)
	v3.SecurityRequirement = v2.Security
	inheritedDocsAsRefs(v3.Components.Schemas)
	s := &Spec{v2: v2, v3: v3}
	if err := s.check(); err != nil {
		return nil, err
	}
	return s, nil
}

// check encodes both documents as they will be served, so that a document
// that cannot be served fails Build rather than a request.
func (s *Spec) check() error {
	j, err := json.Marshal(s.v2)
	if err != nil {
		return fmt.Errorf("openapi: encode v2: %w", err)
	}
	if _, err := handler.ToProtoBinary(j); err != nil {
		return fmt.Errorf("openapi: v2 as protobuf: %w", err)
	}
	j, err = json.Marshal(s.v3)
	if err != nil {
		return fmt.Errorf("openapi: encode v3: %w", err)
	}
	if _, err := handler3.ToV3ProtoBinary(j); err != nil {
		return fmt.Errorf("openapi: v3 as protobuf: %w", err)
	}
	return nil
}

// Definitions returns the v2 definitions by name, each kind's carrying
// its x-kubernetes-group-version-kind: what
// k8s.io/apimachinery/pkg/util/managedfields.NewTypeConverter takes. The
// map is the caller's; the schemas are shared and must not be modified.
func (s *Spec) Definitions() map[string]*spec.Schema {
	out := make(map[string]*spec.Schema, len(s.v2.Definitions))
	for name, d := range s.v2.Definitions {
		out[name] = &d
	}
	return out
}

// V2 returns the OpenAPI v2 document. It must not be modified.
func (s *Spec) V2() *spec.Swagger { return s.v2 }

// V3 returns the OpenAPI v3 document of the cairn.dev/v1alpha1 group
// version. It must not be modified.
func (s *Spec) V3() *spec3.OpenAPI { return s.v3 }

// DefinitionName is the name of the definition of a kind (or of any Go
// type of package api) named kind: "dev.cairn.v1alpha1.Installation".
func DefinitionName(kind string) string { return defPrefix + kind }

// defPrefix names cairn's definitions as Kubernetes names those of a
// custom resource: the group reversed, the version, the kind.
var defPrefix = func() string {
	parts := strings.Split(api.Group, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ".") + "." + api.Version + "."
}()

// Handler serves PathV2, PathV3 and the v3 document of cairn's group
// version (PathV3 + "/" + GroupVersionV3), with ETags, as the Kubernetes
// API server does: v2 as JSON or as protobuf
// (application/com.github.proto-openapi.spec.v2.v1.0+protobuf, also under
// its older name ...spec.v2@v1.0+protobuf), v3 as JSON or protobuf; a v3
// request carrying the document's hash is answered with immutable caching
// headers, one carrying another hash is redirected to the current one.
// Any other path under /openapi/ is NotFound. Mount it on "/openapi/"
// behind authentication.
func (s *Spec) Handler() http.Handler {
	mux := http.NewServeMux()
	handler.NewOpenAPIService(s.v2).RegisterOpenAPIVersionedService(PathV2, mux)
	v3 := handler3.NewOpenAPIService()
	v3.UpdateGroupVersion(GroupVersionV3, s.v3)
	mux.HandleFunc(PathV3, v3.HandleDiscovery)
	mux.HandleFunc(PathV3+"/"+GroupVersionV3, v3.HandleGroupVersion)
	return mux
}

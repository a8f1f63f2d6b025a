package server

import (
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
)

// Discovery, as Kubernetes clients read it, derived from the kind
// registrations: /api (no legacy group), /apis (an APIGroupList, or the
// aggregated apidiscovery.k8s.io/v2 form when asked for),
// /apis/cairn.dev, /apis/cairn.dev/v1alpha1 (an APIResourceList, or with
// api.KindListMediaType cairn's own Discovery) and /version.

// Media types of discovery answers.
var (
	aggregatedDiscovery = mediaOffer{as: "APIGroupDiscoveryList", g: "apidiscovery.k8s.io", v: "v2"}
	kindList            = mediaOffer{as: "KindList", g: api.Group, v: api.Version}
	plainJSON           = mediaOffer{}
)

// The verbs every kind serves, as discovery names them.
var (
	kindVerbs   = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	statusVerbs = []string{"get", "patch", "update"}
)

// serveDiscoveryPath answers the discovery paths outside api.BasePath:
// /api, /apis, /apis/cairn.dev and /version. ok is false for any other
// path. Every authenticated caller may read them: they name kinds, never
// objects.
func (s *Server) serveDiscoveryPath(w *statusWriter, r *http.Request) (ok bool) {
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch p {
	case "/api", "/apis", "/apis/" + api.Group, "/version":
	default:
		return false
	}
	if r.Method != http.MethodGet {
		s.writeError(w, r, methodNotAllowed(r.Method, p, http.MethodGet))
		return true
	}
	aggregated := negotiate(r, plainJSON, aggregatedDiscovery) == aggregatedDiscovery
	switch {
	case p == "/version":
		s.writeJSON(w, r, http.StatusOK, versionInfo())
	case p == "/api" && aggregated:
		s.writeAs(w, r, aggregatedDiscovery, &apidiscoveryv2.APIGroupDiscoveryList{
			TypeMeta: metav1.TypeMeta{APIVersion: "apidiscovery.k8s.io/v2", Kind: "APIGroupDiscoveryList"}})
	case p == "/api":
		// cairn has no legacy group: every kind is in cairn.dev.
		s.writeJSON(w, r, http.StatusOK, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{}})
	case p == "/apis" && aggregated:
		s.writeAs(w, r, aggregatedDiscovery, s.aggregated())
	case p == "/apis":
		s.writeJSON(w, r, http.StatusOK, &metav1.APIGroupList{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "APIGroupList"},
			Groups:   []metav1.APIGroup{apiGroup()}})
	default:
		g := apiGroup()
		g.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "APIGroup"}
		s.writeJSON(w, r, http.StatusOK, &g)
	}
	return true
}

// serveGroupVersion answers GET /apis/cairn.dev/v1alpha1: the kinds as an
// APIResourceList, or cairn's Discovery when asked for with
// api.KindListMediaType.
func (s *Server) serveGroupVersion(w *statusWriter, r *http.Request) {
	if negotiate(r, plainJSON, kindList) == kindList {
		s.writeAs(w, r, kindList, api.Discovery{
			TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Discovery"},
			Kinds:    s.reg.Kinds(),
		})
		return
	}
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "APIResourceList"}, GroupVersion: api.APIVersion}
	for _, k := range s.reg.KindDefs() {
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: k.Plural, SingularName: strings.ToLower(k.Kind), Namespaced: k.Namespaced, Kind: k.Kind,
			Verbs: kindVerbs, ShortNames: k.ShortNames, Categories: k.Categories,
		})
		for _, sub := range subresources(k) {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: k.Plural + "/" + sub.name, Namespaced: k.Namespaced, Kind: sub.kind, Verbs: sub.verbs})
		}
	}
	s.writeJSON(w, r, http.StatusOK, list)
}

// subresource is one subresource of a kind, as discovery shows it.
type subresource struct {
	name  string
	kind  string // the kind of its answers
	verbs []string
}

// subresources are k's status and trace subresources and its object
// actions (a collection action has no place in discovery).
func subresources(k *registry.Kind) []subresource {
	out := []subresource{{"status", k.Kind, statusVerbs}, {traceSubresource, "Trace", []string{"get"}}}
	seen := map[string]int{}
	for _, a := range k.Actions {
		if a.Collection || a.Name == traceSubresource {
			continue
		}
		verb := "create" // POST, as Kubernetes names it
		if a.Method == http.MethodGet {
			verb = "get"
		}
		if i, ok := seen[a.Name]; ok {
			out[i].verbs = append(out[i].verbs, verb)
			continue
		}
		seen[a.Name] = len(out)
		out = append(out, subresource{a.Name, k.Kind, []string{verb}})
	}
	return out
}

// serveOpenAPI serves the OpenAPI v2 and v3 documents of every kind
// (package openapi, through the registry, which derives them from the
// kinds' Go types). Like discovery, every authenticated caller may read
// them.
func (s *Server) serveOpenAPI(w *statusWriter, r *http.Request) {
	s.openapiOnce.Do(func() {
		spec, err := s.reg.OpenAPI()
		if err != nil {
			s.openapiErr = err
			return
		}
		s.openapi = spec.Handler()
	})
	if s.openapiErr != nil {
		s.writeError(w, r, api.NewInternal(s.openapiErr))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.writeError(w, r, methodNotAllowed(r.Method, r.URL.Path, http.MethodGet))
		return
	}
	s.openapi.ServeHTTP(w, r)
}

// apiGroup is cairn's one API group.
func apiGroup() metav1.APIGroup {
	gv := metav1.GroupVersionForDiscovery{GroupVersion: api.APIVersion, Version: api.Version}
	return metav1.APIGroup{Name: api.Group, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}
}

// aggregated is the apidiscovery.k8s.io/v2 form of the discovery of every
// group and version: cairn.dev/v1alpha1 and its kinds.
func (s *Server) aggregated() *apidiscoveryv2.APIGroupDiscoveryList {
	var resources []apidiscoveryv2.APIResourceDiscovery
	for _, k := range s.reg.KindDefs() {
		scope := apidiscoveryv2.ScopeCluster
		if k.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		rd := apidiscoveryv2.APIResourceDiscovery{
			Resource: k.Plural, SingularResource: strings.ToLower(k.Kind), Scope: scope,
			ResponseKind: &metav1.GroupVersionKind{Group: api.Group, Version: api.Version, Kind: k.Kind},
			Verbs:        kindVerbs, ShortNames: k.ShortNames, Categories: k.Categories,
		}
		for _, sub := range subresources(k) {
			rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{
				Subresource: sub.name, Verbs: sub.verbs,
				ResponseKind: &metav1.GroupVersionKind{Group: api.Group, Version: api.Version, Kind: sub.kind}})
		}
		resources = append(resources, rd)
	}
	return &apidiscoveryv2.APIGroupDiscoveryList{
		TypeMeta: metav1.TypeMeta{APIVersion: "apidiscovery.k8s.io/v2", Kind: "APIGroupDiscoveryList"},
		Items: []apidiscoveryv2.APIGroupDiscovery{{
			ObjectMeta: metav1.ObjectMeta{Name: api.Group},
			Versions: []apidiscoveryv2.APIVersionDiscovery{{
				Version: api.Version, Resources: resources, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}},
		}},
	}
}

// KubernetesVersion is the Kubernetes API level cairn speaks, reported by
// /version: the release of the Kubernetes client libraries whose wire
// types it serves. GitVersion carries cairn's own version after a '+'.
const (
	kubeMajor = "1"
	kubeMinor = "37"
)

// versionInfo is the body of /version.
func versionInfo() *version.Info {
	v := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = strings.TrimPrefix(bi.Main.Version, "v")
	}
	return &version.Info{
		Major: kubeMajor, Minor: kubeMinor,
		GitVersion: "v" + kubeMajor + "." + kubeMinor + ".0+cairn." + v,
		GoVersion:  runtime.Version(), Compiler: runtime.Compiler,
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
}

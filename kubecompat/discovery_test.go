package kubecompat_test

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
)

// client-go's discovery client and what is built on it: the REST mapper
// kubectl resolves "inst" or "secret" with, the OpenAPI documents.

// requests records the requests a client sends.
type requests struct {
	mu   sync.Mutex
	list []*http.Request
}

// record makes cfg's client record its requests in r.
func (r *requests) record(cfg *rest.Config) *rest.Config {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			r.mu.Lock()
			r.list = append(r.list, req.Clone(req.Context()))
			r.mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// find returns the recorded requests f accepts.
func (r *requests) find(f func(*http.Request) bool) []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*http.Request
	for _, req := range r.list {
		if f(req) {
			out = append(out, req)
		}
	}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestDiscovery_ClientGoFindsEveryKindInTheAggregatedDocument(t *testing.T) {
	c := startServer(t)
	var reqs requests
	dc, err := discovery.NewDiscoveryClientForConfig(reqs.record(c.config()))
	if err != nil {
		t.Fatal(err)
	}
	groups, resources, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 || groups[0].Name != api.Group || groups[0].PreferredVersion.Version != api.Version {
		t.Errorf("groups %+v, want %s/%s alone", groups, api.Group, api.Version)
	}
	// client-go asked for the aggregated form and, having it, never for
	// the group version's resource list.
	if got := reqs.find(func(r *http.Request) bool {
		return r.URL.Path == "/apis" && strings.Contains(r.Header.Get("Accept"), "apidiscovery.k8s.io")
	}); len(got) == 0 {
		t.Error("client-go did not ask for aggregated discovery")
	}
	if got := reqs.find(func(r *http.Request) bool { return r.URL.Path == "/apis/cairn.dev/v1alpha1" }); len(got) != 0 {
		t.Errorf("client-go fell back to the legacy discovery of %s", got[0].URL)
	}
	if len(resources) != 1 || resources[0].GroupVersion != api.Group+"/"+api.Version {
		t.Fatalf("resources %+v", resources)
	}
	served := map[string][]string{} // resource → verbs
	for _, r := range resources[0].APIResources {
		served[r.Name] = r.Verbs
		if !strings.Contains(r.Name, "/") {
			k := kindNamed(r.Kind)
			if k == nil || r.Namespaced != k.Namespaced || !slices.Equal(r.ShortNames, k.ShortNames) || !slices.Contains(r.Categories, "cairn") {
				t.Errorf("resource %+v does not match its kind", r)
			}
		}
	}
	for _, k := range kinds.All(kinds.Deps{}) {
		verbs := served[k.Plural]
		for _, v := range []string{"get", "list", "watch", "create", "update", "patch", "delete"} {
			if !slices.Contains(verbs, v) {
				t.Errorf("%s: verbs %v lack %s", k.Plural, verbs, v)
			}
		}
		if _, ok := served[k.Plural+"/status"]; !ok {
			t.Errorf("no %s/status", k.Plural)
		}
	}

	preferred, err := dc.ServerPreferredResources()
	if err != nil || len(preferred) != 1 || len(preferred[0].APIResources) != len(kinds.All(kinds.Deps{})) {
		t.Errorf("preferred resources %v, %v; want one per kind (subresources left out)", preferred, err)
	}
	v, err := dc.ServerVersion()
	if err != nil || v.GitVersion == "" {
		t.Errorf("version %+v, %v", v, err)
	}
}

// kindNamed is the registration of kind, or nil.
func kindNamed(kind string) *registry.Kind {
	all := kinds.All(kinds.Deps{})
	if i := slices.IndexFunc(all, func(k registry.Kind) bool { return k.Kind == kind }); i >= 0 {
		return &all[i]
	}
	return nil
}

func TestDiscovery_RESTMapperResolvesNamesAsKubectlDoes(t *testing.T) {
	c := startServer(t)
	dc, err := discovery.NewDiscoveryClientForConfig(c.config())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	expander := restmapper.NewShortcutExpander(mapper, dc, nil)
	tests := []struct{ name, kind, resource string }{
		{"secret", "Secret", "secrets"},
		{"secrets", "Secret", "secrets"},
		{"inst", "Installation", "installations"},
		{"ns", "Namespace", "namespaces"},
		{"installations.cairn.dev", "Installation", "installations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := schema.ParseGroupResource(tt.name).WithVersion("")
			gvk, err := expander.KindFor(r)
			if err != nil || gvk != (schema.GroupVersionKind{Group: api.Group, Version: api.Version, Kind: tt.kind}) {
				t.Errorf("KindFor(%s) = %v, %v", tt.name, gvk, err)
			}
			m, err := mapper.RESTMapping(gvk.GroupKind())
			if err != nil || m.Resource.Resource != tt.resource {
				t.Errorf("RESTMapping(%v) = %v, %v", gvk, m, err)
			}
		})
	}
}

func TestDiscovery_ClientGoReadsTheOpenAPIDocuments(t *testing.T) {
	c := startServer(t)
	dc, err := discovery.NewDiscoveryClientForConfig(c.config())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := dc.OpenAPISchema()
	if err != nil {
		t.Fatalf("v2: %v", err)
	}
	var defs []string
	for _, p := range doc.GetDefinitions().GetAdditionalProperties() {
		defs = append(defs, p.GetName())
	}
	paths, err := dc.OpenAPIV3().Paths()
	if err != nil {
		t.Fatalf("v3: %v", err)
	}
	gv, ok := paths["apis/cairn.dev/v1alpha1"]
	if !ok {
		t.Fatalf("v3 paths %v lack apis/cairn.dev/v1alpha1", paths)
	}
	raw, err := gv.Schema("application/json")
	if err != nil {
		t.Fatalf("v3 document: %v", err)
	}
	for _, k := range kinds.All(kinds.Deps{}) {
		if !slices.ContainsFunc(defs, func(d string) bool { return strings.HasSuffix(d, "."+k.Kind) }) {
			t.Errorf("v2 has no definition of %s", k.Kind)
		}
		if !strings.Contains(string(raw), `"/apis/cairn.dev/v1alpha1/`+k.Plural) && !strings.Contains(string(raw), `/`+k.Plural+`"`) {
			t.Errorf("v3 has no path of %s", k.Plural)
		}
	}
}

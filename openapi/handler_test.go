package openapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/handler3"
)

// get sends a GET of path to the server of cfg with the given headers
// ("Name: value").
func get(t *testing.T, cfg *rest.Config, path string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, cfg.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	// No redirects followed: the test sees them.
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// mustGet returns the body of a 200 answer to a GET of path with accept.
func mustGet(t *testing.T, cfg *rest.Config, path, accept string) []byte {
	t.Helper()
	resp, body := get(t, cfg, path, "Accept: "+accept)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s (%s): %s", path, accept, resp.Status)
	}
	return body
}

func TestHandler_ServesEachDocumentAsKubernetesDoes(t *testing.T) {
	cfg := served(t)
	_, index := get(t, cfg, "/openapi/v3")
	var disco handler3.OpenAPIV3Discovery
	if err := json.Unmarshal(index, &disco); err != nil {
		t.Fatal(err)
	}
	hashed := disco.Paths["apis/cairn.dev/v1alpha1"].ServerRelativeURL
	_, v2 := get(t, cfg, "/openapi/v2", "Accept: application/json")
	etag := func(path string, h ...string) string {
		resp, _ := get(t, cfg, path, h...)
		return resp.Header.Get("Etag")
	}
	tests := []struct {
		name        string
		path        string
		headers     []string
		code        int
		contentType string
		header      string // "Name: value" the answer carries
	}{
		{"v2 as JSON", "/openapi/v2", []string{"Accept: application/json"}, 200, "application/json", ""},
		{"v2 by default", "/openapi/v2", nil, 200, "application/json", ""},
		{"v2 as protobuf", "/openapi/v2", []string{"Accept: application/com.github.proto-openapi.spec.v2.v1.0+protobuf"},
			200, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf", ""},
		{"v2 as protobuf (older name)", "/openapi/v2", []string{"Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json"},
			200, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf", ""},
		{"v2 gzipped", "/openapi/v2", []string{"Accept: application/json", "Accept-Encoding: gzip"}, 200, "application/json", "Content-Encoding: gzip"},
		{"v2 unchanged", "/openapi/v2", []string{"Accept: application/json", "If-None-Match: " + etag("/openapi/v2", "Accept: application/json")}, 304, "", ""},
		{"v2 in YAML is not served", "/openapi/v2", []string{"Accept: application/yaml"}, 406, "", ""},
		{"v3 index", "/openapi/v3", nil, 200, "application/json", ""},
		{"v3 document", "/openapi/v3/apis/cairn.dev/v1alpha1", []string{"Accept: application/json"}, 200, "application/json", ""},
		{"v3 document as protobuf", "/openapi/v3/apis/cairn.dev/v1alpha1", []string{"Accept: application/com.github.proto-openapi.spec.v3@v1.0+protobuf"},
			200, "application/com.github.proto-openapi.spec.v3.v1.0+protobuf", ""},
		{"v3 document by its hash is immutable", hashed, []string{"Accept: application/json"}, 200, "application/json", "Cache-Control: public, immutable"},
		{"v3 document by an old hash is redirected", "/openapi/v3/apis/cairn.dev/v1alpha1?hash=0123", []string{"Accept: application/json"},
			301, "", "Location: " + hashed},
		{"v3 unchanged", "/openapi/v3/apis/cairn.dev/v1alpha1", []string{"Accept: application/json",
			"If-None-Match: " + etag("/openapi/v3/apis/cairn.dev/v1alpha1", "Accept: application/json")}, 304, "", ""},
		{"no core group", "/openapi/v3/api/v1", nil, 404, "", ""},
		{"no other path", "/openapi/v4", nil, 404, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(t, cfg, tt.path, tt.headers...)
			if resp.StatusCode != tt.code {
				t.Fatalf("%s: %s", tt.path, resp.Status)
			}
			if ct := resp.Header.Get("Content-Type"); tt.contentType != "" && ct != tt.contentType {
				t.Errorf("Content-Type %q, want %q", ct, tt.contentType)
			}
			if tt.code == 200 && (resp.Header.Get("Etag") == "" || len(body) == 0) {
				t.Errorf("no ETag or no body: %q, %d bytes", resp.Header.Get("Etag"), len(body))
			}
			if k, v, ok := strings.Cut(tt.header, ": "); ok && resp.Header.Get(k) != v {
				t.Errorf("%s: %q, want %q", k, resp.Header.Get(k), v)
			}
		})
	}
	if !json.Valid(v2) || !strings.Contains(string(v2), `"swagger":"2.0"`) {
		t.Errorf("v2 is not a Swagger 2.0 JSON document: %.200s", v2)
	}
}

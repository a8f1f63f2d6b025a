package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"cairn.dev/cairn/console"
)

// TestHandler_StrictHeadersOnEveryAnswer checks the page, an asset, a
// stable object URL and a refused method all carry the strict headers.
func TestHandler_StrictHeadersOnEveryAnswer(t *testing.T) {
	h := console.Handler()
	for _, tc := range []struct {
		method, path string
		code         int
		contentType  string
	}{
		{"GET", "/ui/", 200, "text/html"},
		{"GET", "/ui/app.js", 200, "javascript"},
		{"GET", "/ui/console.css", 200, "text/css"},
		{"GET", "/ui/namespaces/demo/installations/shop", 200, "text/html"},
		{"GET", "/ui", 301, ""},
		{"POST", "/ui/", 405, ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.code {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, rec.Code, tc.code)
		}
		if ct := rec.Header().Get("Content-Type"); !strings.Contains(ct, tc.contentType) {
			t.Errorf("%s %s: Content-Type %q, want %q", tc.method, tc.path, ct, tc.contentType)
		}
		want := map[string]string{
			"Content-Security-Policy": console.ContentSecurityPolicy,
			"X-Frame-Options":         "DENY",
			"Referrer-Policy":         "no-referrer",
			"X-Content-Type-Options":  "nosniff",
		}
		for k, v := range want {
			if got := rec.Header().Get(k); got != v {
				t.Errorf("%s %s: %s = %q, want %q", tc.method, tc.path, k, got, v)
			}
		}
	}
}

// TestHandler_PolicyForbidsInlineScriptAndThePageHasNone checks the CSP
// allows no inline script or eval, and that the page relies on none.
func TestHandler_PolicyForbidsInlineScriptAndThePageHasNone(t *testing.T) {
	csp := console.ContentSecurityPolicy
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "*", "http:", "data: 'self'; script"} {
		if strings.Contains(csp, bad) {
			t.Errorf("the policy allows %q: %s", bad, csp)
		}
	}
	for _, need := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
		if !strings.Contains(csp, need) {
			t.Errorf("the policy lacks %q: %s", need, csp)
		}
	}
	rec := httptest.NewRecorder()
	console.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/ui/", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, m := range regexp.MustCompile(`<script[^>]*>`).FindAllString(string(body), -1) {
		if !strings.Contains(m, "src=") {
			t.Errorf("the page has an inline script: %s", m)
		}
	}
	if regexp.MustCompile(`\son[a-z]+=`).Match(body) || strings.Contains(string(body), "style=") {
		t.Error("the page has an inline handler or style attribute")
	}
}

// TestServes_OnlyTheConsolePaths checks what the server hands over.
func TestServes_OnlyTheConsolePaths(t *testing.T) {
	for p, want := range map[string]bool{"/ui": true, "/ui/": true, "/ui/events": true, "/uix": false, "/": false, "/apis/cairn.dev/v1alpha1": false} {
		if got := console.Serves(p); got != want {
			t.Errorf("Serves(%q) = %v, want %v", p, got, want)
		}
	}
	_ = http.MethodGet
}

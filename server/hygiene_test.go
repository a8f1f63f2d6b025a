package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

// TestBodyReadTimeout_SlowBodyGets408AndTheConnectionCloses sends bodies
// that trickle in at one byte per 200ms to a server that allows 1s for a
// body: a create gets 408 with a Status; a request refused before its body
// is read (no token, unknown path) gets its answer once the server gives
// up on the body. Every connection is closed and nothing is written.
func TestBodyReadTimeout_SlowBodyGets408AndTheConnectionCloses(t *testing.T) {
	s := servertest.Start(t, servertest.WithBodyReadTimeout(time.Second))
	raw, err := json.Marshal(testkit.Secret("default", "slow", map[string]string{"k": "v"}))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, token string
		code              int
		reason            api.Reason
	}{
		{"create", nsPath("default", "secrets"), s.Token, http.StatusRequestTimeout, api.ReasonRequestTimeout},
		{"without a token", nsPath("default", "secrets"), "", http.StatusUnauthorized, api.ReasonUnauthorized},
		{"unknown resource", nsPath("default", "gadgets"), s.Token, http.StatusNotFound, api.ReasonNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := revision(t, s)
			resp, body, closed := slowRequest(t, s, tc.path, tc.token, raw)
			if resp.StatusCode != tc.code {
				t.Fatalf("code %d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			var st api.Status
			if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" || st.Reason != tc.reason || st.Code != tc.code {
				t.Fatalf("not a %s Status: %s (%v)", tc.reason, body, err)
			}
			if !closed {
				t.Errorf("the connection is still open after the answer")
			}
			if after := revision(t, s); after != before {
				t.Errorf("the store revision moved from %d to %d", before, after)
			}
		})
	}
}

// slowRequest POSTs body to path of s one byte per 200ms (see
// testkit.SlowPost).
func slowRequest(t *testing.T, s *servertest.Server, path, token string, body []byte) (*http.Response, []byte, bool) {
	t.Helper()
	return testkit.SlowPost(t, s.URL, path, token, body, s.Transport().TLSClientConfig)
}

// TestBodyReadTimeout_DoesNotCutWatchesOrStreams: the body deadline
// applies to reading a body only; a watch and a streaming action that
// outlive it keep going.
func TestBodyReadTimeout_DoesNotCutWatchesOrStreams(t *testing.T) {
	h := newWidgetHooks()
	s := startWithWidgets(t, h, servertest.WithBodyReadTimeout(500*time.Millisecond))
	c := newClient(t, s)
	c.do("POST", nsPath("default", "widgets"), testkit.Widget("default", "w", testkit.Spec(`{"size":1}`))).expect(t, http.StatusCreated)
	w := openWatch(t, s, nsPath("default", "secrets")+"?watch=true")
	logs := bufio.NewReader(openStream(t, s, nsPath("default", "widgets", "w", "logs")))
	if l, err := logs.ReadString('\n'); err != nil || l != "line 1 of w\n" {
		t.Fatalf("first log line %q: %v", l, err)
	}
	<-h.started
	time.Sleep(1500 * time.Millisecond) // three times the body deadline

	c.do("POST", nsPath("default", "secrets"), testkit.Secret("default", "late", nil)).expect(t, http.StatusCreated)
	if ev := w.nextChange(t); ev.Type != api.Added || ev.Object.Name != "late" {
		t.Fatalf("watch event %s %s, want ADDED late", ev.Type, ev.Object.Name)
	}
	close(h.release)
	if l, err := logs.ReadString('\n'); err != nil || l != "line 2\n" {
		t.Fatalf("second log line %q: %v", l, err)
	}
}

// TestPaths_EncodedSeparatorsAndRelativeSegmentsAre400: an encoded '/'
// or '\', an encoded NUL, and empty, "." and ".." segments are refused
// with 400 naming the segment's position; none is routed.
func TestPaths_EncodedSeparatorsAndRelativeSegmentsAre400(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	c.do("POST", nsPath("default", "secrets"), testkit.Secret("default", "a", map[string]string{"k": "v"})).expect(t, http.StatusCreated)
	secrets := nsPath("default", "secrets")
	cases := []struct {
		name, method, path string
		segment            int
		why                string
	}{
		{"encoded slash as name and subresource", "GET", secrets + "/a%2Fstatus", 7, "encoded '/'"},
		{"lower-case encoded slash", "GET", secrets + "/a%2fstatus", 7, "encoded '/'"},
		{"encoded slash in the namespace", "GET", base + "/namespaces/default%2Fsecrets/a", 5, "encoded '/'"},
		{"encoded slash in the base path", "GET", "/apis/cairn.dev%2Fv1alpha1/namespaces", 2, "encoded '/'"},
		{"encoded slash in a delete", "DELETE", secrets + "/a%2F", 7, "encoded '/'"},
		{"encoded backslash", "GET", secrets + "/a%5Cb", 7, `'\'`},
		{"encoded NUL", "GET", secrets + "/a%00", 7, "control character"},
		{"encoded escape character", "GET", secrets + "/a%1B", 7, "control character"},
		{"dot-dot segment", "GET", secrets + "/../secrets/a", 7, "relative"},
		{"encoded dot-dot segment", "GET", secrets + "/%2e%2e/secrets/a", 7, "relative"},
		{"dot segment", "GET", secrets + "/./a", 7, "relative"},
		{"empty segment", "GET", base + "/namespaces//secrets", 5, "empty"},
		{"trailing slash", "POST", secrets + "/", 7, "empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := revision(t, s)
			r := c.do(tc.method, tc.path, nil)
			if r.code != http.StatusBadRequest {
				t.Fatalf("%s %s: %d %s, want 400", tc.method, tc.path, r.code, r.body)
			}
			st := r.status(t)
			want := fmt.Sprintf("path segment %d ", tc.segment)
			if !strings.Contains(st.Message, want) || !strings.Contains(st.Message, tc.why) {
				t.Errorf("message %q does not say %q and %q", st.Message, want, tc.why)
			}
			if after := revision(t, s); after != before {
				t.Errorf("the store revision moved from %d to %d", before, after)
			}
		})
	}
	// The object is still there, and the plain paths still route.
	c.do("GET", secrets+"/a", nil).expect(t, http.StatusOK)
	c.do("GET", base+"/", nil).expect(t, http.StatusOK)
}

// TestBodies_CaseVariantsDuplicatesAndBadTextAre400 sends bodies whose
// field names differ from the defined ones only in case, that repeat a
// key, or that are not valid UTF-8, as JSON, YAML, merge patches and
// delete options. Each gets a 400 naming the field (and the right name) or
// the byte offset, never echoing a value, and nothing is written.
func TestBodies_CaseVariantsDuplicatesAndBadTextAre400(t *testing.T) {
	s := startWithWidgets(t, newWidgetHooks())
	c := newClient(t, s)
	secrets, widgets := nsPath("default", "secrets"), nsPath("default", "widgets")
	c.do("POST", secrets, testkit.Secret("default", "existing", map[string]string{"k": "v"})).expect(t, http.StatusCreated)
	c.do("POST", widgets, testkit.Widget("default", "w", testkit.Spec(`{"size":1}`))).expect(t, http.StatusCreated)
	const secret = "s3cr3t-value"
	sec := func(meta, extra string) string {
		return `{"apiVersion":"cairn.dev/v1alpha1","kind":"Secret","metadata":{"name":"new"` + meta + `}` + extra + `}`
	}
	const yamlHead = "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata:\n  name: new\n"
	const merge, yamlType = "application/merge-patch+json", "application/yaml"
	// offset names the byte offset of the first bad part of body.
	offset := func(body, bad string) string { return fmt.Sprintf("offset %d", strings.Index(body, bad)) }
	badJSON := sec("", `,"stringData":{"k":"`+secret+"\xff"+`"}`)
	badYAML := yamlHead + "stringData:\n  k: " + secret + "\xc3\x28\n"
	badPatch := "{\"metadata\":{\"labels\":{\"a\":\"\xfe\"}}}"
	badDelete := "{\"preconditions\":{\"uid\":\"\x80\"}}"
	highOnly := sec("", `,"stringData":{"k":"`+secret+`\ud800"}`)
	lowOnly := `{"metadata":{"labels":{"a":"\udc00x"}}}`
	cases := []struct {
		name         string
		method, path string
		body, ctype  string
		mention      []string // each in the message or a cause's field
	}{
		// Field names in another case.
		{"metadata.Labels", "POST", secrets, sec(`,"Labels":{"a":"b"}`, ""), "", []string{"metadata.Labels", "did you mean labels?"}},
		{"metadata.Name", "POST", secrets, `{"apiVersion":"cairn.dev/v1alpha1","kind":"Secret","metadata":{"Name":"new"}}`, "", []string{"metadata.Name", "did you mean name?"}},
		{"owner reference field in another case", "POST", secrets, sec(`,"ownerReferences":[{"Kind":"Widget","name":"w","uid":"u"}]`, ""), "", []string{"metadata.ownerReferences[0].Kind"}},
		{"Secret datA", "POST", secrets, sec("", `,"datA":{"k":"`+secret+`"}`), "", []string{"datA", "did you mean data?"}},
		{"Secret StringData", "POST", secrets, sec("", `,"StringData":{"k":"`+secret+`"}`), "", []string{"StringData", "did you mean stringData?"}},
		{"Secret Data on replace", "PUT", secrets + "/existing", strings.Replace(sec("", `,"Data":{"k":"dg=="}`), `"new"`, `"existing"`, 1), "", []string{"Data", "did you mean data?"}},
		{"Secret unknown field lists the fields", "POST", secrets, sec("", `,"values":{}`), "", []string{"values", "data, stringData, type"}},
		{"Namespace Spec", "POST", path("namespaces"), `{"apiVersion":"cairn.dev/v1alpha1","kind":"Namespace","metadata":{"name":"team"},"Spec":{}}`, "", []string{"Spec", "status"}},
		{"spec field in another case", "POST", widgets, `{"apiVersion":"cairn.dev/v1alpha1","kind":"Widget","metadata":{"name":"new"},"spec":{"Size":1}}`, "", []string{"spec.Size"}},
		{"YAML StringData", "POST", secrets, yamlHead + "StringData:\n  k: " + secret + "\n", yamlType, []string{"StringData", "did you mean stringData?"}},
		{"YAML metadata.Labels", "POST", secrets, yamlHead + "  Labels: {a: b}\n", yamlType, []string{"metadata.Labels", "did you mean labels?"}},
		{"patch metadata.Labels", "PATCH", secrets + "/existing", `{"metadata":{"Labels":{"a":"b"}}}`, merge, []string{"metadata.Labels", "did you mean labels?"}},
		{"patch Data", "PATCH", secrets + "/existing", `{"Data":{"k":"dg=="}}`, merge, []string{"Data", "did you mean data?"}},
		{"patch spec field in another case", "PATCH", widgets + "/w", `{"spec":{"Size":2}}`, merge, []string{"spec.Size"}},
		{"delete options in another case", "DELETE", secrets + "/existing", `{"Preconditions":{"uid":"x"}}`, "", []string{"Preconditions", "did you mean preconditions?"}},
		{"delete precondition in another case", "DELETE", secrets + "/existing", `{"preconditions":{"UID":"x"}}`, "", []string{"preconditions.UID", "did you mean uid?"}},
		// Duplicate keys.
		{"duplicate top-level key", "POST", secrets, sec("", `,"kind":"Secret"`), "", []string{"kind", "duplicate"}},
		{"duplicate metadata key", "POST", secrets, sec(`,"name":"other"`, ""), "", []string{"metadata.name", "duplicate"}},
		{"duplicate key deep in spec", "POST", widgets, `{"apiVersion":"cairn.dev/v1alpha1","kind":"Widget","metadata":{"name":"new"},"spec":{"a":{"b":1,"b":2}}}`, "", []string{"spec.a.b", "duplicate"}},
		{"duplicate key in a list item", "POST", secrets, sec(`,"ownerReferences":[{"kind":"Widget","kind":"Secret","name":"w","uid":"u"}]`, ""), "", []string{"metadata.ownerReferences[0].kind"}},
		{"duplicate secret key spelled with an escape", "POST", secrets, sec("", `,"stringData":{"k":"`+secret+`","\u006b":"`+secret+`"}`), "", []string{"stringData.k", "duplicate"}},
		{"duplicate YAML key", "POST", secrets, yamlHead + "stringData:\n  k: " + secret + "\n  k: " + secret + "\n", yamlType, []string{"stringData.k", "duplicate"}},
		{"duplicate YAML key deep in spec", "POST", widgets, "apiVersion: cairn.dev/v1alpha1\nkind: Widget\nmetadata: {name: new}\nspec:\n  a:\n    b: 1\n    b: 2\n", yamlType, []string{"spec.a.b", "duplicate"}},
		{"duplicate key in a patch", "PATCH", secrets + "/existing", `{"metadata":{"labels":{"a":"1","a":"2"}}}`, merge, []string{"metadata.labels.a", "duplicate"}},
		{"duplicate key in delete options", "DELETE", secrets + "/existing", `{"preconditions":{"uid":"x","uid":"y"}}`, "", []string{"preconditions.uid", "duplicate"}},
		// Text that is not UTF-8.
		{"invalid UTF-8 in JSON", "POST", secrets, badJSON, "", []string{"not valid UTF-8", offset(badJSON, "\xff")}},
		{"invalid UTF-8 in YAML", "POST", secrets, badYAML, yamlType, []string{"not valid UTF-8", offset(badYAML, "\xc3"), "line 6"}},
		{"invalid UTF-8 in a patch", "PATCH", secrets + "/existing", badPatch, merge, []string{"not valid UTF-8", offset(badPatch, "\xfe")}},
		{"invalid UTF-8 in delete options", "DELETE", secrets + "/existing", badDelete, "", []string{"not valid UTF-8", offset(badDelete, "\x80")}},
		{"half a surrogate pair", "POST", secrets, highOnly, "", []string{"surrogate", offset(highOnly, `\ud800`)}},
		{"a lone low surrogate", "PATCH", secrets + "/existing", lowOnly, merge, []string{"surrogate", offset(lowOnly, `\udc00`)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.ctype != "" {
				hdr = []string{"Content-Type", tc.ctype}
			}
			before := revision(t, s)
			r := c.do(tc.method, tc.path, tc.body, hdr...)
			if r.code != http.StatusBadRequest {
				t.Fatalf("code %d, want 400: %s", r.code, r.body)
			}
			st := r.status(t)
			if st.Reason != api.ReasonBadRequest {
				t.Errorf("reason %s, want BadRequest", st.Reason)
			}
			for _, m := range tc.mention {
				if !names(st, m) {
					t.Errorf("neither the message nor the causes say %q: %s", m, r.body)
				}
			}
			if strings.Contains(string(r.body), secret) {
				t.Errorf("the answer echoes a value: %s", r.body)
			}
			if after := revision(t, s); after != before {
				t.Errorf("the store revision moved from %d to %d: something was written", before, after)
			}
		})
	}

	// The right names, and a valid surrogate pair, still work.
	c.do("POST", secrets, sec(`,"labels":{"a":"b"}`, `,"stringData":{"k":"\ud83d\ude00"}`)).expect(t, http.StatusCreated)
	c.do("PATCH", secrets+"/existing", `{"metadata":{"labels":{"a":"b"}},"data":{"k":"dg=="}}`, "Content-Type", merge).expect(t, http.StatusOK)
}

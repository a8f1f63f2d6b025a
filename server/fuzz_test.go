package server_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"cairn.dev/cairn/internal/testkit"
)

// FuzzDecodeAndValidate feeds arbitrary bodies through the server's decode
// path and the registry's validation (create, replace, status replace and
// merge patch, as JSON or YAML) against a real store, and asserts that no
// body panics the server or gets a 5xx.
//
//	go test ./server -run '^$' -fuzz FuzzDecodeAndValidate -fuzztime 20s
func FuzzDecodeAndValidate(f *testing.F) {
	s := startWithWidgets(f, newWidgetHooks())
	c := newClient(f, s)
	c.do("POST", nsPath("default", "secrets"), testkit.Secret("default", "existing", map[string]string{"k": "v"})).expect(f, http.StatusCreated)
	c.do("POST", nsPath("default", "widgets"), testkit.Widget("default", "w", testkit.Spec(`{"size":1}`))).expect(f, http.StatusCreated)

	seeds := []struct {
		body string
		yaml bool
		op   uint8
	}{
		{`{"apiVersion":"cairn.dev/v1alpha1","kind":"Secret","metadata":{"name":"s"},"stringData":{"a":"b"}}`, false, 0},
		{"apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata:\n  generateName: gen-\ndata:\n  a: Yg==\n", true, 0},
		{`{"apiVersion":"cairn.dev/v1alpha1","kind":"Widget","metadata":{"name":"x","labels":{"a":"b"}},"spec":{"size":3,"color":"red"}}`, false, 1},
		{`{"apiVersion":"cairn.dev/v1alpha1","kind":"Widget","metadata":{"name":"x","ownerReferences":[{"kind":"Widget","name":"w","uid":"u"}]}}`, false, 1},
		{`{"apiVersion":"cairn.dev/v1alpha1","kind":"Secret","metadata":{"name":"existing","resourceVersion":"1"},"data":{"k":"dg=="}}`, false, 2},
		{`{"apiVersion":"cairn.dev/v1alpha1","kind":"Widget","metadata":{"name":"w"},"status":{"phase":"Ready"}}`, false, 3},
		{`{"metadata":{"labels":{"x":"y"},"finalizers":["example.com/f"]},"spec":{"size":2}}`, false, 4},
		{`{"metadata":{"creationTimestamp":"yesterday","generation":1e99}}`, false, 0},
		{`{"apiVersion":"cairn.dev/v1alpha1","kind":"Secret","metadata":{"name":"s","deletionTimestamp":"2020-01-01T00:00:00Z"}}`, false, 0},
		{`[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]`, false, 1},
		{"- a\n- b: [c, {d: e}]\n", true, 2},
		{"\xff\xfe{\"a\":\"\x00\"}", false, 0},
		{`{"spec":null,"status":{"phase":{"deep":[1,2,{"x":null}]}}}`, false, 4},
		{"{\"apiVersion\":\"cairn.dev/v1alpha1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"\\u00e9\"}}", false, 1},
		{"", false, 3},
		{`{"apiVersion":"cairn.dev/v1alpha1","kind":"Secret","metadata":{"name":"d","name":"e"},"stringData":{"a":"\ud800","a":"b"}}`, false, 0},
		{`{"metadata":{"Labels":{"x":"y"}},"Spec":{"Size":2},"spec":{"a":{"b":1,"b":2}}}`, false, 4},
		{"apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: y, Name: z}\nStringData: {a: b, a: c}\n", true, 0},
		{"{\"apiVersion\":\"cairn.dev/v1alpha1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\"},\"spec\":{\"color\":\"\xc3\x28\"}}", false, 1},
	}
	for _, sd := range seeds {
		f.Add([]byte(sd.body), sd.yaml, sd.op)
	}
	f.Fuzz(func(t *testing.T, body []byte, yaml bool, op uint8) {
		var method, p string
		switch op % 5 {
		case 0:
			method, p = "POST", nsPath("default", "secrets")
		case 1:
			method, p = "POST", nsPath("default", "widgets")
		case 2:
			method, p = "PUT", nsPath("default", "secrets", "existing")
		case 3:
			method, p = "PUT", nsPath("default", "widgets", "w", "status")
		case 4:
			method, p = "PATCH", nsPath("default", "widgets", "w")
		}
		req := httptest.NewRequest(method, p, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.Token)
		switch {
		case method == "PATCH":
			req.Header.Set("Content-Type", "application/merge-patch+json")
		case yaml:
			req.Header.Set("Content-Type", "application/yaml")
		default:
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		s.API.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s with %q: %d %s", method, p, body, rec.Code, rec.Body.Bytes())
		}
	})
}

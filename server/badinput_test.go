package server_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
)

// TestBadInput_ClearFourXXNamingTheFieldAndNoWrite sends malformed or
// invalid requests and checks for each: the HTTP code, the Status reason,
// that the message or a cause names the field (or the position, for syntax
// errors), and that the store revision did not move: nothing was written.
func TestBadInput_ClearFourXXNamingTheFieldAndNoWrite(t *testing.T) {
	s := startWithWidgets(t, newWidgetHooks())
	c := newClient(t, s)
	user := c.as(s.NewToken(t, identityUser("alice")))

	secrets := nsPath("default", "secrets")
	widgets := nsPath("default", "widgets")
	existing := c.do("POST", secrets, testkit.Secret("default", "existing", map[string]string{"k": "v"})).expect(t, http.StatusCreated).object(t)
	c.do("PATCH", secrets+"/existing", `{"metadata":{"labels":{"v":"2"}}}`, "Content-Type", "application/merge-patch+json").
		expect(t, http.StatusOK) // existing's first version is now stale
	c.do("POST", secrets, testkit.Secret("default", "dying", nil)).expect(t, http.StatusCreated)
	c.do("DELETE", secrets+"/dying", nil).expect(t, http.StatusAccepted)
	owner := c.do("POST", widgets, testkit.Widget("default", "owner", testkit.Spec(`{"size":1}`))).expect(t, http.StatusCreated).object(t)
	c.do("POST", path("namespaces"), `{"apiVersion":"cairn.dev/v1alpha1","kind":"Namespace","metadata":{"name":"other"}}`).expect(t, http.StatusCreated)
	foreign := c.do("POST", nsPath("other", "widgets"), testkit.Widget("other", "foreign", testkit.Spec(`{"size":1}`))).expect(t, http.StatusCreated).object(t)

	// sec builds a Secret body with extra raw JSON fields.
	sec := func(meta, extra string) string {
		if meta == "" {
			meta = `"name":"new"`
		}
		if extra != "" {
			extra = "," + extra
		}
		return `{"apiVersion":"cairn.dev/v1alpha1","kind":"Secret","metadata":{` + meta + `}` + extra + `}`
	}
	wid := func(meta, spec string) string {
		return `{"apiVersion":"cairn.dev/v1alpha1","kind":"Widget","metadata":{"name":"new"` + meta + `},"spec":{` + spec + `}}`
	}
	ownerRef := func(kind, name, uid string) string {
		return fmt.Sprintf(`,"ownerReferences":[{"kind":%q,"name":%q,"uid":%q}]`, kind, name, uid)
	}
	const merge = "application/merge-patch+json"

	cases := []struct {
		name         string
		method, path string
		body         string
		ctype        string
		caller       *client
		code         int
		reason       api.Reason
		mention      string // in the message, or a cause's field
	}{
		// Syntax.
		{"truncated JSON", "POST", secrets, `{"apiVersion":`, "", nil, 400, api.ReasonBadRequest, "line 1, column"},
		{"JSON syntax error on line 3", "POST", secrets, "{\n\"kind\": \"Secret\",\n\"metadata\": {,}\n}", "", nil, 400, api.ReasonBadRequest, "line 3"},
		{"JSON trailing garbage", "POST", secrets, sec("", "") + " x", "", nil, 400, api.ReasonBadRequest, "line 1"},
		{"JSON array body", "POST", secrets, `[]`, "", nil, 400, api.ReasonBadRequest, "JSON object"},
		{"JSON null body", "POST", secrets, `null`, "", nil, 400, api.ReasonBadRequest, "JSON object"},
		{"empty body", "POST", secrets, ``, "", nil, 400, api.ReasonBadRequest, "empty"},
		{"malformed YAML", "POST", secrets, "apiVersion: cairn.dev/v1alpha1\nmetadata: [\n  name: x\n", "application/yaml", nil, 400, api.ReasonBadRequest, "line"},
		{"YAML scalar body", "POST", secrets, "just a string\n", "application/yaml", nil, 400, api.ReasonBadRequest, "JSON object"},
		{"patch not JSON", "PATCH", secrets + "/existing", `{"metadata":`, merge, nil, 400, api.ReasonBadRequest, "line 1"},
		// Type and kind.
		{"wrong apiVersion", "POST", secrets, strings.Replace(sec("", ""), "cairn.dev/v1alpha1", "v1", 1), "", nil, 400, api.ReasonBadRequest, "apiVersion"},
		{"missing apiVersion", "POST", secrets, `{"kind":"Secret","metadata":{"name":"new"}}`, "", nil, 400, api.ReasonBadRequest, "apiVersion"},
		{"apiVersion not a string", "POST", secrets, `{"apiVersion":1,"kind":"Secret","metadata":{"name":"new"}}`, "", nil, 400, api.ReasonBadRequest, "apiVersion"},
		{"kind does not match URL", "POST", secrets, strings.Replace(sec("", ""), `"Secret"`, `"Namespace"`, 1), "", nil, 400, api.ReasonBadRequest, "kind"},
		{"missing kind", "POST", secrets, `{"apiVersion":"cairn.dev/v1alpha1","metadata":{"name":"new"}}`, "", nil, 400, api.ReasonBadRequest, "kind"},
		{"YAML with wrong kind", "POST", secrets, "apiVersion: cairn.dev/v1alpha1\nkind: Widget\nmetadata:\n  name: new\n", "application/yaml", nil, 400, api.ReasonBadRequest, "kind"},
		// Names and URL consistency.
		{"invalid DNS-1123 name", "POST", secrets, sec(`"name":"Bad_Name"`, ""), "", nil, 422, api.ReasonInvalid, "metadata.name"},
		{"name longer than 63", "POST", secrets, sec(`"name":"`+strings.Repeat("a", 64)+`"`, ""), "", nil, 422, api.ReasonInvalid, "metadata.name"},
		{"missing name", "POST", secrets, sec(`"labels":{}`, ""), "", nil, 422, api.ReasonInvalid, "metadata.name"},
		{"invalid generateName", "POST", secrets, sec(`"generateName":"UP-"`, ""), "", nil, 422, api.ReasonInvalid, "metadata.generateName"},
		{"body namespace contradicts URL", "POST", secrets, sec(`"name":"new","namespace":"other"`, ""), "", nil, 400, api.ReasonBadRequest, "metadata.namespace"},
		{"body name contradicts URL", "PUT", secrets + "/existing", sec(`"name":"someone-else"`, ""), "", nil, 400, api.ReasonBadRequest, "metadata.name"},
		{"namespace on a cluster-scoped kind", "POST", path("namespaces"), `{"apiVersion":"cairn.dev/v1alpha1","kind":"Namespace","metadata":{"name":"x","namespace":"default"}}`, "", nil, 400, api.ReasonBadRequest, "metadata.namespace"},
		{"patch renames the object", "PATCH", secrets + "/existing", `{"metadata":{"name":"renamed"}}`, merge, nil, 400, api.ReasonBadRequest, "metadata.name"},
		// Size and fields.
		{"oversized body", "POST", secrets, sec("", `"stringData":{"k":"`+strings.Repeat("x", 3<<20)+`"}`), "", nil, 413, api.ReasonTooLarge, "limit"},
		{"unknown top-level field", "POST", widgets, `{"apiVersion":"cairn.dev/v1alpha1","kind":"Widget","metadata":{"name":"new"},"spce":{}}`, "", nil, 400, api.ReasonBadRequest, "spce"},
		{"unknown spec field", "POST", widgets, wid("", `"colour":"red"`), "", nil, 400, api.ReasonBadRequest, "colour"},
		{"unknown metadata field", "POST", secrets, sec(`"name":"new","nmae":"x"`, ""), "", nil, 400, api.ReasonBadRequest, "metadata.nmae"},
		{"labels of the wrong type", "POST", secrets, sec(`"name":"new","labels":"a=b"`, ""), "", nil, 400, api.ReasonBadRequest, "metadata.labels"},
		{"spec field of the wrong type", "POST", widgets, wid("", `"size":"big"`), "", nil, 400, api.ReasonBadRequest, "size"},
		{"spec value rejected by the kind", "POST", widgets, wid("", `"size":-1`), "", nil, 422, api.ReasonInvalid, "spec.size"},
		{"spec enum not supported", "POST", widgets, wid("", `"color":"green"`), "", nil, 422, api.ReasonInvalid, "spec.color"},
		{"invalid label key", "POST", secrets, sec(`"name":"new","labels":{"bad key!":"v"}`, ""), "", nil, 422, api.ReasonInvalid, "metadata.labels"},
		{"invalid label value", "POST", secrets, sec(`"name":"new","labels":{"k":"has spaces"}`, ""), "", nil, 422, api.ReasonInvalid, "metadata.labels"},
		{"invalid annotation key", "POST", secrets, sec(`"name":"new","annotations":{"a/b/c":"v"}`, ""), "", nil, 422, api.ReasonInvalid, "metadata.annotations"},
		{"bad base64 in secret data", "POST", secrets, sec("", `"data":{"k":"!!not base64!!"}`), "", nil, 422, api.ReasonInvalid, `data[k]`},
		{"invalid secret data key", "POST", secrets, sec("", `"stringData":{"bad/key":"v"}`), "", nil, 422, api.ReasonInvalid, "data"},
		{"stringData of the wrong type", "POST", secrets, sec("", `"stringData":{"k":1}`), "", nil, 400, api.ReasonBadRequest, "stringData"},
		{"resourceVersion not a number", "PUT", secrets + "/existing", sec(`"name":"existing","resourceVersion":"abc"`, ""), "", nil, 400, api.ReasonBadRequest, "resourceVersion"},
		// Finalizers and owners.
		{"finalizer added to a deleting object", "PATCH", secrets + "/dying", `{"metadata":{"finalizers":["cairn.dev/cascade-deletion","example.com/keep"]}}`, merge, nil, 422, api.ReasonInvalid, "metadata.finalizers"},
		{"cascade finalizer set by a client", "POST", secrets, sec(`"name":"new","finalizers":["cairn.dev/cascade-deletion"]`, ""), "", nil, 422, api.ReasonInvalid, "metadata.finalizers"},
		{"duplicate finalizer", "POST", secrets, sec(`"name":"new","finalizers":["example.com/a","example.com/a"]`, ""), "", nil, 422, api.ReasonInvalid, "metadata.finalizers"},
		{"owner in another namespace", "POST", secrets, sec(`"name":"new"`+ownerRef("Widget", "foreign", foreign.UID), ""), "", nil, 422, api.ReasonInvalid, "metadata.ownerReferences[0]"},
		{"owner that does not exist", "POST", secrets, sec(`"name":"new"`+ownerRef("Widget", "ghost", "0000"), ""), "", nil, 422, api.ReasonInvalid, "metadata.ownerReferences[0]"},
		{"owner uid mismatch", "POST", secrets, sec(`"name":"new"`+ownerRef("Widget", "owner", "not-"+owner.UID), ""), "", nil, 422, api.ReasonInvalid, "metadata.ownerReferences[0].uid"},
		{"owner of an unknown kind", "POST", secrets, sec(`"name":"new"`+ownerRef("Gadget", "owner", owner.UID), ""), "", nil, 422, api.ReasonInvalid, "metadata.ownerReferences[0].kind"},
		{"owner reference without uid", "POST", secrets, sec(`"name":"new"`+ownerRef("Widget", "owner", ""), ""), "", nil, 422, api.ReasonInvalid, "metadata.ownerReferences[0].uid"},
		{"cluster-scoped owner of a namespaced object", "POST", secrets, sec(`"name":"new"`+ownerRef("Namespace", "default", "x"), ""), "", nil, 422, api.ReasonInvalid, "metadata.ownerReferences[0].kind"},
		// Names differing only in case must not override what was checked.
		{"metadata spelled with a capital", "POST", secrets, sec("", `"Metadata":{"name":"zz","namespace":"other","uid":"mine"}`), "", nil, 400, api.ReasonBadRequest, "Metadata"},
		{"kind spelled with a capital", "POST", secrets, sec("", `"Kind":"Namespace"`), "", nil, 400, api.ReasonBadRequest, "Kind"},
		{"status spelled with a capital", "POST", widgets, `{"apiVersion":"cairn.dev/v1alpha1","kind":"Widget","metadata":{"name":"new"},"spec":{"size":1},"Status":{"phase":"Done"}}`, "", nil, 400, api.ReasonBadRequest, "Status"},
		{"fields differing only in case", "POST", widgets, `{"apiVersion":"cairn.dev/v1alpha1","kind":"Widget","metadata":{"name":"new"},"spec":{"size":1},"SPEC":{}}`, "", nil, 400, api.ReasonBadRequest, "SPEC"},
		{"patch changing the kind", "PATCH", secrets + "/existing", `{"kind":"Namespace"}`, merge, nil, 400, api.ReasonBadRequest, "kind"},
		{"patch changing the apiVersion", "PATCH", secrets + "/existing", `{"apiVersion":"evil/v9"}`, merge, nil, 400, api.ReasonBadRequest, "apiVersion"},
		// Query parameters.
		{"continue token from the future", "GET", secrets + "?limit=1&continue=" + futureContinue(), "", "", nil, 400, api.ReasonBadRequest, "continue"},
		{"watch from a future resourceVersion", "GET", secrets + "?watch=true&resourceVersion=99999999", "", "", nil, 400, api.ReasonBadRequest, "resourceVersion"},
		{"negative limit", "GET", secrets + "?limit=-1", "", "", nil, 400, api.ReasonBadRequest, "limit"},
		{"non-numeric limit", "GET", secrets + "?limit=ten", "", "", nil, 400, api.ReasonBadRequest, "limit"},
		{"bad label selector", "GET", secrets + "?labelSelector=a%20in%20(b", "", "", nil, 400, api.ReasonBadRequest, "labelSelector"},
		{"bad continue token", "GET", secrets + "?limit=1&continue=garbage", "", "", nil, 400, api.ReasonBadRequest, "continue"},
		{"bad force value", "DELETE", secrets + "/existing?force=perhaps", "", "", nil, 400, api.ReasonBadRequest, "force"},
		{"unknown delete option", "DELETE", secrets + "/existing", `{"propagation":"Orphan"}`, "", nil, 400, api.ReasonBadRequest, "propagation"},
		// Routing, media types, conflicts and permissions.
		{"unknown kind", "POST", nsPath("default", "gadgets"), sec("", ""), "", nil, 404, api.ReasonNotFound, `resource "gadgets"`},
		{"strategic merge patch", "PATCH", secrets + "/existing", `{"metadata":{"labels":{"a":"b"}}}`, "application/strategic-merge-patch+json", nil, 415, api.ReasonUnsupportedMedia, "strategic"},
		{"JSON patch that does not apply", "PATCH", secrets + "/existing", `[{"op":"test","path":"/type","value":"other"}]`, "application/json-patch+json", nil, 400, api.ReasonBadRequest, "JSON patch"},
		{"JSON patch that is not one", "PATCH", secrets + "/existing", `{"op":"add"}`, "application/json-patch+json", nil, 400, api.ReasonBadRequest, "JSON patch"},
		{"unknown query parameter on a create", "POST", secrets + "?dryrun=All", sec("", ""), "", nil, 400, api.ReasonBadRequest, "dryrun"},
		{"unknown query parameter on a delete", "DELETE", secrets + "/existing?cascade=orphan", "", "", nil, 400, api.ReasonBadRequest, "cascade"},
		{"unknown query parameter on a list", "GET", secrets + "?labelselector=a", "", "", nil, 400, api.ReasonBadRequest, "labelselector"},
		{"dry run of another stage", "POST", secrets + "?dryRun=Some", sec("", ""), "", nil, 400, api.ReasonBadRequest, "dryRun"},
		{"field selector on another field", "GET", secrets + "?fieldSelector=spec.x%3Dy", "", "", nil, 400, api.ReasonBadRequest, "spec.x"},
		{"delete options of another kind", "DELETE", secrets + "/existing", `{"kind":"Secret"}`, "", nil, 400, api.ReasonBadRequest, "DeleteOptions"},
		{"propagation policy unknown", "DELETE", secrets + "/existing?propagationPolicy=Sideways", "", "", nil, 400, api.ReasonBadRequest, "propagationPolicy"},
		{"orphanDependents with a policy", "DELETE", secrets + "/existing?propagationPolicy=Foreground&orphanDependents=true", "", "", nil, 400, api.ReasonBadRequest, "orphanDependents"},
		{"patch without content type", "PATCH", secrets + "/existing", `{}`, "", nil, 415, api.ReasonUnsupportedMedia, "Content-Type"},
		{"unsupported body content type", "POST", secrets, sec("", ""), "text/plain", nil, 415, api.ReasonUnsupportedMedia, "Content-Type"},
		{"PUT with a stale resourceVersion", "PUT", secrets + "/existing", sec(`"name":"existing","resourceVersion":"`+existing.ResourceVersion+`"`, ""), "", nil, 409, api.ReasonConflict, "existing"},
		{"create in a missing namespace", "POST", nsPath("nowhere", "secrets"), sec("", ""), "", nil, 404, api.ReasonNotFound, "nowhere"},
		{"PUT of a missing object", "PUT", secrets + "/missing", sec(`"name":"missing"`, ""), "", nil, 404, api.ReasonNotFound, "missing"},
		{"force delete by a non-admin", "DELETE", secrets + "/existing?force=true", "", "", user, 403, api.ReasonForbidden, "existing"},
	}
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			caller := c
			if tc.caller != nil {
				caller = tc.caller
			}
			var body any
			if tc.body != "" {
				body = tc.body
			}
			var hdr []string
			if tc.ctype != "" {
				hdr = []string{"Content-Type", tc.ctype}
			}
			before := revision(t, s)
			r := caller.do(tc.method, tc.path, body, hdr...)
			if r.code != tc.code {
				t.Fatalf("code %d, want %d: %s", r.code, tc.code, r.body)
			}
			st := r.status(t)
			if st.Reason != tc.reason || st.Code != tc.code {
				t.Errorf("status %d %s, want %d %s: %s", st.Code, st.Reason, tc.code, tc.reason, r.body)
			}
			if !names(st, tc.mention) {
				t.Errorf("neither the message nor the causes name %q: %s", tc.mention, r.body)
			}
			if len(r.body) > 4096 {
				t.Errorf("the error echoes the request: %d bytes", len(r.body))
			}
			if after := revision(t, s); after != before {
				t.Errorf("the store revision moved from %d to %d: something was written", before, after)
			}
		})
	}
}

// names reports whether the status message or a cause's field mentions s.
func names(st *api.Status, s string) bool {
	if strings.Contains(st.Message, s) {
		return true
	}
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			if strings.Contains(c.Field, s) {
				return true
			}
		}
	}
	return false
}

// futureContinue forges a continue token for a revision the store has not
// reached: a client error, never a 500.
func futureContinue() string {
	raw := `{"rev":999999999,"from":"/cairn/objects/secrets/default/"}`
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

// ownWidget grants a scoped token get and poke on the Widget its scope
// names: a global rule, as the events feature adds for worker tokens.
func ownWidget(_ context.Context, a authz.Attributes) (authz.Decision, string) {
	if a.Kind == "Widget" && a.User.Scope == a.Namespace+"/"+a.Name && (a.Verb == authz.VerbGet || a.Verb == "poke") {
		return authz.Allow, ""
	}
	return authz.NoOpinion, ""
}

// TestScopedToken_RefusedEverywhereButWhatRulesGrant: over HTTP, a scoped
// token gets 403 on every endpoint, resources and others alike, except
// discovery (which every authenticated caller may read) and what an
// authorization rule grants its scope; the message says who may not do
// what.
func TestScopedToken_RefusedEverywhereButWhatRulesGrant(t *testing.T) {
	s := startWithWidgets(t, newWidgetHooks(), servertest.WithAuthorize(ownWidget))
	admin := newClient(t, s)
	for _, name := range []string{"w1", "w2"} {
		admin.do("POST", nsPath("default", "widgets"), testkit.Widget("default", name, testkit.Spec(`{"size":1}`))).expect(t, http.StatusCreated)
	}
	worker := admin.as(s.NewToken(t, identity.User{Name: "event:default/w1", Scope: "default/w1"}))

	worker.do("GET", nsPath("default", "widgets", "w1"), nil).expect(t, http.StatusOK)
	worker.do("GET", base, nil).expect(t, http.StatusOK) // discovery: kind names, for any caller
	worker.do("POST", nsPath("default", "widgets", "w1", "poke"), nil).expect(t, http.StatusOK)
	for _, req := range []struct{ method, path, says string }{
		{"GET", nsPath("default", "widgets", "w2"), `may not get widgets "w2" in namespace default`},
		{"GET", nsPath("default", "widgets"), "may not list widgets in namespace default"},
		{"GET", path("widgets") + "?watch=true", "may not watch widgets"},
		{"PUT", nsPath("default", "widgets", "w1", "status"), `may not update widgets/status "w1"`},
		{"PATCH", nsPath("default", "widgets", "w1"), `may not patch widgets "w1"`},
		{"DELETE", nsPath("default", "widgets", "w1"), `may not delete widgets "w1"`},
		{"POST", nsPath("default", "widgets", "w2", "poke"), `may not poke widgets "w2"`},
		{"POST", nsPath("default", "widgets", "cancel"), "may not cancel widgets in namespace default"},
		{"DELETE", nsPath("default", "widgets") + "?phase=x", "may not deletecollection widgets"},
		{"POST", nsPath("default", "secrets"), `may not create secrets "stolen" in namespace default`},
		{"GET", "/metrics", "may not get /metrics"},
		{"GET", "/nowhere", "may not get /nowhere"},
	} {
		var body any
		switch req.method {
		case "PUT":
			body = testkit.Widget("default", "w1", testkit.Spec(`{"size":2}`))
		case "PATCH":
			body = `{"spec":{"size":3}}`
		case "POST":
			if strings.HasSuffix(req.path, "secrets") {
				body = testkit.Secret("default", "stolen", nil)
			}
		}
		var headers []string
		if req.method == "PATCH" {
			headers = []string{"Content-Type", "application/merge-patch+json"}
		}
		st := worker.do(req.method, req.path, body, headers...).expect(t, http.StatusForbidden).status(t)
		if st.Reason != api.ReasonForbidden || !strings.Contains(st.Message, "user event:default/w1 (scope default/w1) "+req.says) {
			t.Errorf("%s %s: %s %q", req.method, req.path, st.Reason, st.Message)
		}
	}
	// Admins reach the endpoints that are not resources.
	admin.do("GET", "/metrics", nil).expect(t, http.StatusOK)
	admin.do("GET", base, nil).expect(t, http.StatusOK)
}

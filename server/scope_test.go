package server_test

import (
	"net/http"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
)

// TestScopedToken_ReachesNothingItsScopeDoesNotGrant: a scoped, non-admin
// token (such as an Event's worker token) is refused everywhere until a
// kind grants its scope something; it never gets a user's broad access.
func TestScopedToken_ReachesNothingItsScopeDoesNotGrant(t *testing.T) {
	s := startWithWidgets(t, newWidgetHooks())
	c := newClient(t, s)
	c.do("POST", nsPath("default", "secrets"), testkit.Secret("default", "db", map[string]string{"k": "v"})).expect(t, http.StatusCreated)
	worker := c.as(s.NewToken(t, identity.User{Name: "event:default/e1", Scope: "default/e1"}))
	for _, req := range []struct{ method, path string }{
		{"GET", nsPath("default", "secrets", "db")},
		{"GET", nsPath("default", "secrets")},
		{"GET", path("secrets") + "?watch=true"},
		{"DELETE", nsPath("default", "secrets", "db")},
	} {
		r := worker.do(req.method, req.path, nil).expect(t, http.StatusForbidden)
		if st := r.status(t); st.Reason != api.ReasonForbidden {
			t.Errorf("%s %s: reason %s", req.method, req.path, st.Reason)
		}
	}
	c.do("GET", nsPath("default", "secrets", "db"), nil).expect(t, http.StatusOK)
}

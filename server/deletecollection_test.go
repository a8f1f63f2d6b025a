package server_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

func TestDeleteCollection_DeletesWhatTheSelectorsSelectOnly(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	for _, o := range []*api.Object{
		testkit.Secret("default", "a", nil, testkit.Labels("app", "web")),
		testkit.Secret("default", "b", nil, testkit.Labels("app", "web")),
		testkit.Secret("default", "c", nil, testkit.Labels("app", "db")),
	} {
		c.do("POST", coll, o).expect(t, http.StatusCreated)
	}
	left := func() []string {
		var out []string
		for _, o := range c.do("GET", coll, nil).expect(t, http.StatusOK).list(t).Items {
			if !o.Deleting() {
				out = append(out, o.Name)
			}
		}
		return out
	}
	// A dry run deletes nothing.
	dry := c.do("DELETE", coll+"?labelSelector=app%3Dweb&dryRun=All", nil).expect(t, http.StatusOK).list(t)
	if len(dry.Items) != 2 || !slices.Equal(left(), []string{"a", "b", "c"}) {
		t.Fatalf("dry run: answered %d, left %v", len(dry.Items), left())
	}
	// The field selector narrows the label selector's choice.
	c.do("DELETE", coll+"?labelSelector=app%3Dweb&fieldSelector=metadata.name%3Da&propagationPolicy=Background", nil).expect(t, http.StatusOK)
	if got := left(); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("after deleting app=web named a: %v", got)
	}
	out := c.do("DELETE", coll+"?labelSelector=app%3Dweb", nil).expect(t, http.StatusOK).list(t)
	if len(out.Items) != 1 || out.Items[0].Name != "b" || !out.Items[0].Deleting() {
		t.Fatalf("answered %+v", out.Items)
	}
	if got := left(); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("after deleting app=web: %v", got)
	}
}

func TestDeleteCollection_NeedsDeleteOnEachObject(t *testing.T) {
	s := servertest.Start(t, servertest.WithAuthorize(listSecretsOnly))
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	c.do("POST", coll, testkit.Secret("default", "a", nil)).expect(t, http.StatusCreated)
	reader := s.NewToken(t, identity.User{Name: "reader", Scope: "reader"})
	c.as(reader).do("DELETE", coll, nil).expect(t, http.StatusForbidden)
	if o := c.do("GET", coll+"/a", nil).expect(t, http.StatusOK).object(t); o.Deleting() {
		t.Fatal("a caller without delete deleted through the collection")
	}
}

// listSecretsOnly lets the "reader" scope get and list Secrets, nothing
// else.
func listSecretsOnly(_ context.Context, a authz.Attributes) (authz.Decision, string) {
	if a.User.Scope != "reader" {
		return authz.NoOpinion, ""
	}
	if a.Kind == api.KindSecret && (a.Verb == authz.VerbList || a.Verb == authz.VerbGet) {
		return authz.Allow, ""
	}
	return authz.Deny, "readers only read secrets"
}

package authz_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/identity"
)

// kindEvent is the Event kind of the events feature, which rules will name.
const kindEvent = "Event"

var (
	admin  = identity.User{Name: "admin", Admin: true}
	alice  = identity.User{Name: "alice"}
	worker = identity.User{Name: "event:demo/e1", Scope: "demo/e1"}
)

// ownEvent allows a scoped caller to get the Event its scope names.
func ownEvent(_ context.Context, a authz.Attributes) (authz.Decision, string) {
	if a.Kind == kindEvent && a.Verb == authz.VerbGet && a.User.Scope == a.Namespace+"/"+a.Name {
		return authz.Allow, ""
	}
	return authz.NoOpinion, ""
}

// noSecrets denies secrets to scoped callers.
func noSecrets(_ context.Context, a authz.Attributes) (authz.Decision, string) {
	if a.Kind == api.KindSecret && a.User.Scope != "" {
		return authz.Deny, "workers never read secrets through the API"
	}
	return authz.NoOpinion, ""
}

func allowAll(context.Context, authz.Attributes) (authz.Decision, string) { return authz.Allow, "" }

func TestAuthorizer_Decide(t *testing.T) {
	secrets := authz.Attributes{Verb: authz.VerbList, Kind: api.KindSecret, Namespace: "demo"}
	event := authz.Attributes{Verb: authz.VerbGet, Kind: kindEvent, Namespace: "demo", Name: "e1"}
	other := event
	other.Name = "e2"
	force := authz.Attributes{Verb: authz.VerbDelete, Kind: api.KindSecret, Namespace: "demo", Name: "db", Force: true}
	metrics := authz.Attributes{Verb: authz.VerbGet, Path: "/metrics"}
	run := authz.Attributes{Verb: authz.VerbRun, Kind: "DeployItem", Namespace: "demo", Name: "app"}
	as := func(u identity.User, a authz.Attributes) authz.Attributes { a.User = u; return a }

	cases := []struct {
		name   string
		global []authz.Rule
		first  []authz.Rule
		attrs  authz.Attributes
		want   authz.Decision
		why    string
	}{
		{"admins are allowed without rules", nil, nil, as(admin, secrets), authz.Allow, ""},
		{"admins may force", nil, nil, as(admin, force), authz.Allow, ""},
		{"admins pass a denying rule", []authz.Rule{noSecrets}, nil, as(admin, secrets), authz.Allow, ""},
		{"no rule: denied", nil, nil, as(alice, secrets), authz.Deny, ""},
		{"no opinion anywhere: denied", []authz.Rule{ownEvent}, nil, as(worker, other), authz.Deny, ""},
		{"a kind rule grants a scoped caller", nil, []authz.Rule{ownEvent}, as(worker, event), authz.Allow, ""},
		{"a global rule grants a scoped caller", []authz.Rule{ownEvent}, nil, as(worker, event), authz.Allow, ""},
		{"nil rules are skipped", []authz.Rule{nil, ownEvent}, []authz.Rule{nil}, as(worker, event), authz.Allow, ""},
		{"the first opinion wins: deny before allow", []authz.Rule{allowAll}, []authz.Rule{noSecrets}, as(worker, secrets), authz.Deny, "workers never read secrets through the API"},
		{"the first opinion wins: per-request rules first", []authz.Rule{noSecrets}, []authz.Rule{allowAll}, as(worker, secrets), authz.Allow, ""},
		{"unscoped users are allowed by AllowUnscoped", []authz.Rule{authz.AllowUnscoped}, nil, as(alice, secrets), authz.Allow, ""},
		{"AllowUnscoped leaves scoped callers to other rules", []authz.Rule{authz.AllowUnscoped}, nil, as(worker, secrets), authz.Deny, ""},
		{"AllowUnscoped does not grant run", []authz.Rule{authz.AllowUnscoped}, nil, as(alice, run), authz.Deny,
			"running commands on a host is granted to admins and to the workers of projects that list it"},
		{"admins hold run", nil, nil, as(admin, run), authz.Allow, ""},
		{"AllowUnscoped covers paths", []authz.Rule{authz.AllowUnscoped}, nil, as(alice, metrics), authz.Allow, ""},
		{"scoped callers may not read metrics", []authz.Rule{authz.AllowUnscoped}, nil, as(worker, metrics), authz.Deny, ""},
		{"only admins may force, whatever the rules", []authz.Rule{allowAll}, []authz.Rule{allowAll}, as(alice, force), authz.Deny, "only admins may force a deletion"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, why := authz.New(tc.global...).Decide(context.Background(), tc.attrs, tc.first...)
			if d != tc.want || why != tc.why {
				t.Fatalf("decision %s %q, want %s %q", d, why, tc.want, tc.why)
			}
		})
	}
}

func TestAuthorize_ForbiddenSaysWhoMayNotDoWhat(t *testing.T) {
	z := authz.New(noSecrets)
	cases := []struct {
		attrs authz.Attributes
		want  string
	}{
		{authz.Attributes{User: worker, Verb: authz.VerbList, Kind: api.KindSecret, Namespace: "demo"},
			"user event:demo/e1 (scope demo/e1) may not list secrets in namespace demo: workers never read secrets through the API"},
		{authz.Attributes{User: alice, Verb: authz.VerbUpdate, Kind: api.KindNamespace, Name: "team", Subresource: "status"},
			`user alice may not update namespaces/status "team"`},
		{authz.Attributes{User: alice, Verb: authz.VerbDelete, Kind: api.KindSecret, Namespace: "demo", Name: "db", Force: true},
			`user alice may not delete (force) secrets "db" in namespace demo: only admins may force a deletion`},
		{authz.Attributes{User: worker, Verb: "cancel", Kind: kindEvent, Namespace: "demo", Name: "e2"},
			`user event:demo/e1 (scope demo/e1) may not cancel events "e2" in namespace demo`},
		{authz.Attributes{User: worker, Verb: authz.VerbGet, Path: "/metrics"},
			"user event:demo/e1 (scope demo/e1) may not get /metrics"},
	}
	for _, tc := range cases {
		err := z.Authorize(context.Background(), tc.attrs)
		var st *api.Status
		if !errors.As(err, &st) || !errors.Is(err, api.ErrForbidden) || st.Code != 403 {
			t.Errorf("%+v: %v, want a Forbidden status", tc.attrs, err)
			continue
		}
		if st.Message != tc.want {
			t.Errorf("message %q\n want %q", st.Message, tc.want)
		}
		if tc.attrs.Kind != "" && (st.Details == nil || st.Details.Kind != tc.attrs.Kind || st.Details.Name != tc.attrs.Name) {
			t.Errorf("%s: details %+v", tc.want, st.Details)
		}
	}
	if err := z.Authorize(context.Background(), authz.Attributes{User: admin, Verb: authz.VerbList, Kind: api.KindSecret}); err != nil {
		t.Errorf("admin: %v", err)
	}
	if msg := authz.Describe(authz.Attributes{Verb: authz.VerbGet, Kind: api.KindSecret}); !strings.HasPrefix(msg, "user (anonymous) may not") {
		t.Errorf("anonymous: %q", msg)
	}
}

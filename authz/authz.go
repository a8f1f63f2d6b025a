// Package authz decides whether an authenticated caller may do what a
// request asks. Every API request goes through one Authorizer: the
// registry asks it for each verb on each object (and each kind action),
// the server for each endpoint that is not a resource (/metrics,
// discovery).
//
// The decision is made by rules: small functions that look at the
// request's Attributes and answer Allow, Deny or NoOpinion. Admins are
// allowed everything; a forced deletion is for admins only; otherwise the
// first rule with an opinion decides, and a request no rule allows is
// refused (fail closed).
package authz

import (
	"context"
	"fmt"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
)

// The verbs of the API on resources. A kind action's verb is its name
// ("cancel", "jobs", "logs").
const (
	VerbGet    = "get"
	VerbList   = "list"
	VerbWatch  = "watch"
	VerbCreate = "create"
	VerbUpdate = "update"
	VerbPatch  = "patch"
	VerbDelete = "delete"
	// VerbRun is causing a command to run on a host: a Project's worker
	// and job commands, a deploy item of a type that runs one (container).
	// It is checked as the principal an object acts for (its creator), on
	// the kind that runs the command.
	VerbRun = "run"
)

// Attributes describe one request to authorize: who asks to do what to
// which object, or, with Path set, to which endpoint that is not a
// resource.
type Attributes struct {
	// User is the authenticated caller.
	User identity.User
	// Verb is one of the Verb constants or a kind action's name.
	Verb string
	// Kind is the kind's name ("Secret"); empty for a Path.
	Kind string
	// Namespace is the object's (or the collection's) namespace; empty for
	// cluster-scoped kinds and for lists or watches across namespaces.
	Namespace string
	// Name is the object's name; empty for collections (list, watch,
	// collection actions) and for creates with a generated name.
	Name string
	// Subresource is "status" for status writes, else empty.
	Subresource string
	// Force marks a delete that drops every finalizer (admins only).
	Force bool
	// Path is the URL path of a non-resource endpoint ("/metrics",
	// api.BasePath for discovery); empty for resources.
	Path string
}

// Decision is a rule's answer.
type Decision int

// The answers of a rule.
const (
	// NoOpinion leaves the decision to the next rule.
	NoOpinion Decision = iota
	// Allow grants the request.
	Allow
	// Deny refuses the request, whatever later rules would say.
	Deny
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "Allow"
	case Deny:
		return "Deny"
	}
	return "NoOpinion"
}

// Rule decides about a request, or has no opinion. The reason explains a
// Deny to the caller (it is put in the Forbidden message); it may be empty.
// A rule runs on every request it is consulted for: it must not block on
// I/O, and must be safe for concurrent use.
type Rule func(ctx context.Context, a Attributes) (Decision, string)

// Authorizer decides with a fixed list of global rules, after the rules
// given with each request. It is safe for concurrent use.
type Authorizer struct {
	rules []Rule
}

// New returns an Authorizer that consults rules (nil entries are skipped)
// after the rules given to each call.
func New(rules ...Rule) *Authorizer {
	return &Authorizer{rules: rules}
}

// Decide returns the decision about a and its reason, in this order:
//   - an admin caller is allowed everything;
//   - a forced deletion by anyone else is denied;
//   - then first (e.g. the rules of the action, then of the kind, that a
//     request addresses) and the Authorizer's global rules are consulted
//     in order, and the first Allow or Deny decides;
//   - when no rule has an opinion, the request is denied.
//
// It never returns NoOpinion, and does not block unless a rule does.
func (z *Authorizer) Decide(ctx context.Context, a Attributes, first ...Rule) (Decision, string) {
	if a.User.Admin {
		return Allow, ""
	}
	if a.Force {
		return Deny, "only admins may force a deletion"
	}
	for _, rules := range [][]Rule{first, z.rules} {
		for _, rule := range rules {
			if rule == nil {
				continue
			}
			if d, why := rule(ctx, a); d != NoOpinion {
				return d, why
			}
		}
	}
	return Deny, ""
}

// Authorize returns nil when Decide allows a, else a Forbidden *api.Status
// whose message says who may not do what, and why when a rule said so:
// `user event:ns/e1 (scope ns/e1) may not list secrets in namespace demo`.
// It does not block unless a rule does.
func (z *Authorizer) Authorize(ctx context.Context, a Attributes, first ...Rule) error {
	d, why := z.Decide(ctx, a, first...)
	if d == Allow {
		return nil
	}
	return Forbidden(a, why)
}

// Forbidden builds the error refusing a, with the reason why (may be "").
func Forbidden(a Attributes, why string) *api.Status {
	msg := Describe(a)
	if why != "" {
		msg += ": " + why
	}
	st := api.NewStatus(api.ReasonForbidden, "%s", msg)
	if a.Kind != "" {
		st.Details = &api.StatusDetails{Kind: a.Kind, Name: a.Name}
	}
	return st
}

// Describe says in words who may not do what: `user alice may not delete
// (force) secrets "db" in namespace demo`.
func Describe(a Attributes) string {
	var b strings.Builder
	who := a.User.Name
	if who == "" {
		who = "(anonymous)"
	}
	fmt.Fprintf(&b, "user %s", who)
	if a.User.Scope != "" {
		fmt.Fprintf(&b, " (scope %s)", a.User.Scope)
	}
	fmt.Fprintf(&b, " may not %s", a.Verb)
	if a.Force {
		b.WriteString(" (force)")
	}
	if a.Path != "" {
		fmt.Fprintf(&b, " %s", a.Path)
		return b.String()
	}
	res := api.Plural(a.Kind)
	if a.Subresource != "" {
		res += "/" + a.Subresource
	}
	fmt.Fprintf(&b, " %s", res)
	if a.Name != "" {
		fmt.Fprintf(&b, " %q", a.Name)
	}
	if a.Namespace != "" {
		fmt.Fprintf(&b, " in namespace %s", a.Namespace)
	}
	return b.String()
}

// AllowUnscoped allows every request of a caller without a scope but run:
// a user's token, as opposed to the scoped token of an Event's worker,
// which gets only what rules grant its scope. It is cairn's policy for
// user tokens until users get permissions of their own; the server
// installs it. Running commands on a host must be held explicitly (admins
// hold it; a worker when its project grants it), so it denies run. A
// forced deletion stays admin-only (Decide refuses it before any rule).
func AllowUnscoped(_ context.Context, a Attributes) (Decision, string) {
	switch {
	case a.User.Scope != "":
		return NoOpinion, ""
	case a.Verb == VerbRun:
		return Deny, "running commands on a host is granted to admins and to the workers of projects that list it"
	}
	return Allow, ""
}

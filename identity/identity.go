// Package identity carries the authenticated caller of an API request
// through a context, from the server's authentication (or an in-process
// client, which names its caller explicitly) down to the registry,
// authorization and kind-specific hooks.
//
// It fails closed: a context without a caller has no identity, and the
// registry refuses such a request; nothing is ever treated as admin by
// default.
package identity

import "context"

// User is an authenticated caller.
type User struct {
	// Name identifies the caller in logs and audit ("admin", "event:ns/name").
	Name string
	// Admin callers may do everything, including forced deletion.
	Admin bool
	// Scope, when set, limits a non-admin caller to what the kinds'
	// authorization rules grant that scope: "namespace/name" of an Event
	// for a worker token.
	Scope string
}

type ctxKey struct{}

// With returns a context carrying u.
func With(ctx context.Context, u User) context.Context { return context.WithValue(ctx, ctxKey{}, u) }

// From returns the caller in ctx, and false when ctx carries none (the
// caller must then refuse the request).
func From(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(ctxKey{}).(User)
	return u, ok && u.Name != ""
}

// System is the identity in-process controllers act as when they are
// built with it explicitly (an admin). Nothing falls back to it.
func System() User { return User{Name: "system:controllers", Admin: true} }

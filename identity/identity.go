// Package identity carries the authenticated caller of an API request
// through a context, from the server's authentication down to the registry
// and kind-specific actions.
package identity

import "context"

// User is an authenticated caller.
type User struct {
	// Name identifies the caller in logs and audit ("admin", "event:ns/name").
	Name string
	// Admin callers may do everything, including forced deletion.
	Admin bool
	// Scope, when set, limits a non-admin caller to the object it names,
	// "namespace/name" of an Event for a worker token.
	Scope string
}

type ctxKey struct{}

// With returns a context carrying u.
func With(ctx context.Context, u User) context.Context { return context.WithValue(ctx, ctxKey{}, u) }

// From returns the caller in ctx. In-process callers (controllers) carry no
// user and are treated as the system, which is admin.
func From(ctx context.Context) User {
	if u, ok := ctx.Value(ctxKey{}).(User); ok {
		return u
	}
	return System()
}

// System is the identity of in-process controllers.
func System() User { return User{Name: "system", Admin: true} }

// Package identity carries the authenticated caller of an API request
// through a context, from the server's authentication (or an in-process
// client, which names its caller explicitly) down to the registry,
// authorization and kind-specific hooks.
//
// It fails closed: a context without a caller has no identity, and the
// registry refuses such a request; nothing is ever treated as admin by
// default.
package identity

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
)

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

// PeerHeader carries, from one cairn process to another, the caller a
// request is made for (EncodeHeader). A process believes it only on a
// connection whose client presented a cairn peer certificate (package
// pki): from anyone else it is ignored, and the request is authenticated
// by its own bearer token.
const PeerHeader = "X-Cairn-Peer-Identity"

// EncodeHeader is u as the value of PeerHeader: base64url of its JSON.
func EncodeHeader(u User) string {
	b, _ := json.Marshal(headerUser{Name: u.Name, Admin: u.Admin, Scope: u.Scope}) // plain strings and a bool
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeHeader reads what EncodeHeader wrote. Errors: ErrBadHeader for
// anything else, or a user without a name.
func DecodeHeader(v string) (User, error) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return User{}, ErrBadHeader
	}
	var h headerUser
	if err := json.Unmarshal(b, &h); err != nil || h.Name == "" {
		return User{}, ErrBadHeader
	}
	return User(h), nil
}

// ErrBadHeader is DecodeHeader's error.
var ErrBadHeader = errors.New("identity: malformed " + PeerHeader + " header")

// headerUser is User's wire form in PeerHeader.
type headerUser struct {
	Name  string `json:"name"`
	Admin bool   `json:"admin,omitempty"`
	Scope string `json:"scope,omitempty"`
}

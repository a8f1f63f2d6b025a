package registry

import (
	"context"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/identity"
)

// errNoCaller refuses a request whose context carries no identity: the
// registry fails closed and never treats such a request as an admin's.
func errNoCaller() error {
	return api.NewStatus(api.ReasonUnauthorized, "no authenticated caller in the request context")
}

// caller returns the identity in ctx, or Unauthorized.
func caller(ctx context.Context) (identity.User, error) {
	u, ok := identity.From(ctx)
	if !ok {
		return u, errNoCaller()
	}
	return u, nil
}

// admit is how every public verb starts: it takes the caller from ctx
// (Unauthorized without one), finds the kind (NotFound), and authorizes the
// request a (whose User and Kind it fills; Forbidden when refused).
func (r *Registry) admit(ctx context.Context, kind string, a authz.Attributes) (*Kind, identity.User, error) {
	u, err := caller(ctx)
	if err != nil {
		return nil, u, err
	}
	k, err := r.Lookup(kind)
	if err != nil {
		return nil, u, err
	}
	return k, u, r.authorizeFor(ctx, k, u, a, nil)
}

// authorizeFor is authorize, then admitFor: a request that acts for an
// object (api.OnBehalfOf) must be allowed to the caller and to that
// object's creator.
func (r *Registry) authorizeFor(ctx context.Context, k *Kind, u identity.User, a authz.Attributes, action authz.Rule) error {
	if err := r.authorize(ctx, k, u, a, action); err != nil {
		return err
	}
	a.Kind = k.Kind
	if !k.Namespaced {
		a.Namespace = ""
	}
	return r.admitFor(ctx, a)
}

// authorize asks the registry's Authorizer about a on kind k by u,
// consulting the action's rule (when not nil) and the kind's first.
func (r *Registry) authorize(ctx context.Context, k *Kind, u identity.User, a authz.Attributes, action authz.Rule) error {
	a.User, a.Kind = u, k.Kind
	if !k.Namespaced {
		a.Namespace = ""
	}
	return r.authz.Authorize(ctx, a, action, k.authorize)
}

// Authorizer returns the registry's Authorizer (its global rules are
// Options.Authorize), for the server to authorize the endpoints that are
// not resources with the same rules.
func (r *Registry) Authorizer() *authz.Authorizer { return r.authz }

// Act calls action a of kind k (found with Lookup) for the caller in ctx:
// it refuses a ctx without a caller (Unauthorized) and a caller the
// Authorizer does not allow the action's verb on req's object or
// collection (Forbidden), then calls a.Handle. It blocks as long as Handle
// does; errors other than these are Handle's.
func (r *Registry) Act(ctx context.Context, k *Kind, a *Action, req ActionRequest) (ActionResult, error) {
	u, err := caller(ctx)
	if err != nil {
		return ActionResult{}, err
	}
	attrs := authz.Attributes{Verb: a.Verb(), Namespace: req.Namespace, Name: req.Name}
	if err := r.authorizeFor(ctx, k, u, attrs, a.Authorize); err != nil {
		return ActionResult{}, err
	}
	res, err := a.Handle(ctx, req)
	if err != nil {
		// Store failures an action returns as they come become API
		// errors here, as every verb's (apiError).
		return res, apiError(err, k.Kind, req.Name)
	}
	return res, nil
}

package event

import (
	"context"
	"errors"
	"slices"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/store"
)

// maxGrants bounds the grants cache; beyond it, entries are dropped (the
// next request of their token fills its entry again).
const maxGrants = 10000

// grant is what a worker token may do besides its own event's endpoints.
type grant struct {
	project string
	rules   []api.PermissionRule
}

// splitScope parses a worker token's scope "namespace/name".
func splitScope(scope string) (ns, name string, ok bool) {
	ns, name, ok = strings.Cut(scope, "/")
	return ns, name, ok && ns != "" && name != ""
}

// CheckToken is the authenticator's scope check (auth.ScopeCheck) for
// worker tokens: the token works while its event exists, the token is
// registered for a unit of that event (its tokens record, with the
// event's uid, lists the hash: RegisterToken) and its worker is not
// terminal; otherwise the request is Forbidden, saying why (the caller is
// known, its token may no longer act). On success it records the
// permissions of the event's project for Authorize. It blocks on three
// reads of the store (the event, its tokens record and its project).
// Errors: Forbidden as above, Unauthorized for a scope that is not an
// event's, and the store's.
func (s *Service) CheckToken(ctx context.Context, hash string, u identity.User) error {
	ns, name, ok := splitScope(u.Scope)
	if !ok {
		return api.NewStatus(api.ReasonUnauthorized, "the token's scope %q is not an event's", u.Scope)
	}
	ev, err := s.getEvent(ctx, ns, name)
	switch {
	case errors.Is(err, api.ErrNotFound):
		s.forget(u.Scope)
		s.revoke(ctx, hash)
		return api.NewStatus(api.ReasonForbidden, "the token's event %s does not exist (deleted?): its token no longer works", u.Scope)
	case err != nil:
		return err
	}
	registered, err := s.registeredFor(ctx, ev, hash)
	switch {
	case err != nil:
		return err
	case !registered:
		s.forget(u.Scope)
		return api.NewStatus(api.ReasonForbidden, "the token is not the token of event %s (deleted and created again?): it no longer works", u.Scope)
	case ev.Status.Worker.Phase.Terminal():
		s.forget(u.Scope)
		return api.NewStatus(api.ReasonForbidden, "the token's event %s is %s: its token no longer works", u.Scope, ev.Status.Worker.Phase)
	}
	g := grant{project: ev.Spec.Project}
	if reg, err := s.registry(); err == nil {
		if p, _, err := readProject(system(ctx), reg, ns, ev.Spec.Project); err == nil {
			g.rules = p.Spec.WorkerPermissions
		} else if !errors.Is(err, api.ErrInvalid) { // Invalid: the project is gone, so no permissions
			return err
		}
	}
	s.grantsMu.Lock()
	if len(s.grants) >= maxGrants {
		for k := range s.grants {
			delete(s.grants, k)
			if len(s.grants) < maxGrants/2 {
				break
			}
		}
	}
	s.grants[u.Scope] = g
	s.grantsMu.Unlock()
	return nil
}

// registeredFor reports whether the token whose hash is hash is registered
// for a unit of ev (this event, not an earlier one of its name). It blocks
// on one store read.
func (s *Service) registeredFor(ctx context.Context, ev *api.Event, hash string) (bool, error) {
	reg, err := s.registry()
	if err != nil {
		return false, err
	}
	rec, _, err := readTokens(ctx, reg.Store(), ev.Namespace, ev.Name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return rec.UID == ev.UID && slices.Contains(rec.Hashes, hash), nil
}

// revoke unregisters the token whose hash is hash: the token of an event
// that is gone is cleared the first time it is presented again. A failure
// is only logged: the token stays refused either way.
func (s *Service) revoke(ctx context.Context, hash string) {
	reg, err := s.registry()
	if err != nil {
		return
	}
	if _, err := reg.Store().Txn(ctx, nil, auth.RevokeHashOp(hash)); err != nil {
		s.opts.Logger.Warn("could not unregister the token of a deleted event", "err", err)
	}
}

func (s *Service) forget(scope string) {
	s.grantsMu.Lock()
	delete(s.grants, scope)
	s.grantsMu.Unlock()
}

// Authorize is the registry's rule for worker tokens (callers with a
// Scope; it has no opinion about others). A worker token may read its own
// Event, create its jobs and read its logs, and do what its project's
// workerPermissions grant in its namespace; nothing else: another
// namespace, cluster-scoped kinds, status writes, another event's jobs,
// kinds or verbs not granted, and endpoints that are not resources (but
// discovery) are denied, saying why. It never blocks: the permissions are
// those CheckToken recorded while authenticating the same request.
func (s *Service) Authorize(_ context.Context, a authz.Attributes) (authz.Decision, string) {
	if a.User.Scope == "" {
		return authz.NoOpinion, ""
	}
	ns, name, ok := splitScope(a.User.Scope)
	if !ok {
		return authz.Deny, "the token's scope is not an event's"
	}
	if a.Path != "" {
		if a.Path == api.BasePath && a.Verb == authz.VerbGet {
			return authz.Allow, ""
		}
		return authz.Deny, "a worker token reaches only the resources of its namespace"
	}
	if a.Namespace != ns {
		return authz.Deny, "a worker token acts only in its event's namespace " + ns
	}
	if a.Kind == api.KindEvent {
		own := a.Name == name
		switch {
		case own && a.Subresource == "" && slices.Contains([]string{authz.VerbGet, "jobs", "logs"}, a.Verb):
			return authz.Allow, ""
		case a.Verb == "jobs":
			return authz.Deny, "a worker creates the jobs of its own event only"
		}
	}
	if a.Subresource != "" {
		return authz.Deny, "status is written by the controllers"
	}
	s.grantsMu.Lock()
	g, ok := s.grants[a.User.Scope]
	s.grantsMu.Unlock()
	if !ok {
		return authz.Deny, "the token's permissions are not known"
	}
	if why := api.Ungrantable(a.Kind); why != "" {
		return authz.Deny, why
	}
	if granted(g.rules, a.Kind, a.Verb) {
		return authz.Allow, ""
	}
	return authz.Deny, "not granted by the workerPermissions of project " + g.project
}

package event

import (
	"context"
	"errors"
	"slices"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/identity"
)

// Record is the registry's Authority.Record for worker tokens: a worker
// principal is its token's identity and the project of its event, whose
// workerPermissions are what it may do wherever it is the creator. It
// takes the project from what CheckToken recorded for the same token, else
// reads the event. Errors: Forbidden when the scope is not an event's or
// the event is gone, and the store's.
func (s *Service) Record(ctx context.Context, u identity.User) (api.Creator, error) {
	ns, name, ok := splitScope(u.Scope)
	if !ok {
		return api.Creator{}, api.NewStatus(api.ReasonForbidden, "the token's scope %q is not an event's", u.Scope)
	}
	s.grantsMu.Lock()
	g, cached := s.grants[u.Scope]
	s.grantsMu.Unlock()
	project := g.project
	if !cached {
		ev, err := s.getEvent(ctx, ns, name)
		if errors.Is(err, api.ErrNotFound) {
			return api.Creator{}, api.NewStatus(api.ReasonForbidden, "the token's event %s does not exist", u.Scope)
		}
		if err != nil {
			return api.Creator{}, err
		}
		project = ev.Spec.Project
	}
	return api.Creator{Name: u.Name, Scope: u.Scope, Project: project}, nil
}

// Permits is the registry's Authority.Permits: the worker principal c may
// do a when a is in c's namespace and the workerPermissions of c's
// project, read now, grant it (never on the kinds api.Ungrantable names).
// It blocks on one read of the project. Errors: the store's.
func (s *Service) Permits(ctx context.Context, c api.Creator, a authz.Attributes) (authz.Decision, string, error) {
	ns, _, ok := splitScope(c.Scope)
	switch {
	case !ok:
		return authz.Deny, "the principal's scope is not an event's", nil
	case a.Namespace != ns:
		return authz.Deny, "a worker acts only in its event's namespace " + ns, nil
	case api.Ungrantable(a.Kind) != "":
		return authz.Deny, api.Ungrantable(a.Kind), nil
	case c.Project == "":
		return authz.Deny, "the principal names no project", nil
	}
	reg, err := s.registry()
	if err != nil {
		return authz.Deny, "", err
	}
	p, _, err := readProject(system(ctx), reg, ns, c.Project)
	switch {
	case errors.Is(err, api.ErrInvalid): // the project is gone: no permissions
		return authz.Deny, "project " + c.Project + " does not exist any more", nil
	case err != nil:
		return authz.Deny, "", err
	}
	if granted(p.Spec.WorkerPermissions, a.Kind, a.Verb) {
		return authz.Allow, "", nil
	}
	return authz.Deny, "not granted by the workerPermissions of project " + c.Project, nil
}

// granted reports whether rules grant verb on kind. A kind's actions map
// to the verbs they are like: deletecollection to delete, logs to get,
// cancel to update.
func granted(rules []api.PermissionRule, kind, verb string) bool {
	switch verb {
	case "deletecollection":
		verb = authz.VerbDelete
	case "logs":
		verb = authz.VerbGet
	case "cancel":
		verb = authz.VerbUpdate
	}
	if api.Ungrantable(kind) != "" {
		return false
	}
	for _, r := range rules {
		if slices.Contains(r.Kinds, kind) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

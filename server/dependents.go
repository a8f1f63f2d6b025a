package server

import (
	"context"
	"errors"
	"net/http"

	"cairn.dev/cairn/api"
)

// dependentsSubresource is the path segment of what an object's deletion
// would take: GET .../{plural}/{name}/dependents.
const dependentsSubresource = api.ActionDependents

// DependentsSource gives the server the garbage collector's answer to
// what a deletion would take. The graph that answers is the one of the
// process leading the controllers: this server, or another `cairn
// server` or `cairn controller-manager`, reached at the address
// TraceSource.Leader gives, as trace requests are.
type DependentsSource interface {
	// Dependents returns what deleting kind ns/name would take and true,
	// or false when this process does not lead the controllers now. It
	// does not block beyond a lock. Errors: NotFound for an object the
	// graph does not hold (yet); another error while the graph is being
	// built.
	Dependents(ctx context.Context, kind, ns, name string) (*api.Dependents, bool, error)
}

// serveDependents answers GET .../{plural}/{name}/dependents: the tree of
// objects a deletion of the object would take, with counts per kind, the
// protected objects that would block it and the dependents it would only
// detach. Whoever may get the object may ask. The answer comes from the
// dependency graph of the process leading the controllers: this one, or
// the leader, to which the request is forwarded for the caller as trace
// requests are (forwardTrace: a verified cairn peer; the caller's token
// is never sent on). Nothing is read from the store but the object.
func (s *Server) serveDependents(w *statusWriter, r *http.Request, rt *route) {
	ctx := r.Context()
	if _, err := s.reg.Get(ctx, rt.kind.Kind, rt.ns, rt.name); err != nil {
		s.writeError(w, r, err)
		return
	}
	src := s.opts.Dependents
	if src == nil || s.opts.Traces == nil {
		s.writeError(w, r, api.NewStatus(api.ReasonUnavailable, "this server keeps no dependency graph (it runs no garbage collector)"))
		return
	}
	d, leading, err := src.Dependents(ctx, rt.kind.Kind, rt.ns, rt.name)
	if leading {
		switch {
		case errors.Is(err, api.ErrNotFound):
			s.writeError(w, r, unavailable("the garbage collector's graph has not seen this object yet; try again"))
		case err != nil:
			s.writeError(w, r, unavailable("the garbage collector's graph is not ready: "+err.Error()+"; try again"))
		default:
			s.writeJSON(w, r, http.StatusOK, d)
		}
		return
	}
	if r.Header.Get(ForwardedHeader) != "" {
		s.writeError(w, r, unavailable("this server does not lead the controllers any more; try again"))
		return
	}
	leader, err := s.opts.Traces.Leader(ctx)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if leader == "" {
		s.writeError(w, r, unavailable("no process leads the controllers now, and the dependency graph is the leader's: "+
			"start `cairn server` with controllers or a `cairn controller-manager`"))
		return
	}
	s.forwardTrace(w, r, leader)
}

package event

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/conflict"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/registry"
)

// handleCancel serves POST .../events/{name}/cancel.
func (s *Service) handleCancel(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
	ev, err := s.Cancel(ctx, req.Namespace, req.Name)
	if err != nil {
		return registry.ActionResult{}, err
	}
	return registry.ActionResult{Object: ev}, nil
}

// Cancelled is what cancelling does to a worker or job in phase p: PENDING
// becomes CANCELED; STARTING, RUNNING and UNKNOWN become ABORTED; a
// terminal phase stays (ok false).
func Cancelled(p api.EventPhase) (next api.EventPhase, ok bool) {
	switch {
	case p == api.PhasePending:
		return api.PhaseCanceled, true
	case !p.Terminal():
		return api.PhaseAborted, true
	}
	return p, false
}

// Cancel cancels the event ns/name, following the seed's "Event is
// Canceled by an API Call": a PENDING worker becomes CANCELED, a STARTING,
// RUNNING or UNKNOWN one ABORTED, and each of its jobs likewise, in one
// status write. The runtime's processes are the observer's to kill (at
// once, the event being canceled or aborted): the caller does not wait for
// them. It blocks on a read and a write of the store (retried when the
// status changed meanwhile). Errors: NotFound; Conflict when the worker is
// already terminal; the store's.
func (s *Service) Cancel(ctx context.Context, ns, name string) (*api.Event, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	who := "an API call"
	if u, ok := identity.From(ctx); ok {
		who = u.Name
	}
	// A Conflict is a stale read (the observer wrote meanwhile) or a
	// worker that became terminal: read again, and decide again.
	get := func(ctx context.Context) (*api.Event, error) { return s.getEvent(ctx, ns, name) }
	cancel := func(ev *api.Event) (bool, error) {
		next, ok := Cancelled(ev.Status.Worker.Phase)
		if !ok {
			return false, api.NewConflict(api.KindEvent, name, fmt.Sprintf("the worker is already %s: only a PENDING, STARTING or RUNNING event can be canceled", ev.Status.Worker.Phase))
		}
		now := s.opts.Now().UTC()
		ev.Status.Worker.Phase, ev.Status.Worker.Reason = next, "canceled by "+who
		ev.Status.Worker.Ended = now
		for i := range ev.Status.Jobs {
			j := &ev.Status.Jobs[i]
			if jp, ok := Cancelled(j.Phase); ok {
				j.Phase, j.Reason, j.Ended = jp, "its event was canceled", now
			}
		}
		return true, nil
	}
	out, _, err := conflict.Modify(ctx, nil, get, cancel, func(ctx context.Context, ev *api.Event) (*api.Event, error) {
		return s.writeStatus(ctx, reg, ev)
	})
	return out, err
}

// writeStatus writes ev's status, a compare-and-swap on its
// resourceVersion, and answers the stored event. Errors: the registry's
// (Conflict when ev is behind the store).
func (s *Service) writeStatus(ctx context.Context, reg *registry.Registry, ev *api.Event) (*api.Event, error) {
	obj, err := api.FromResource(ev)
	if err != nil {
		return nil, err
	}
	out, err := reg.UpdateStatus(system(ctx), obj)
	if err != nil {
		return nil, err
	}
	return decodeEvent(out)
}

// criteria are the required parameters of cancel-many and delete-many.
type criteria struct {
	project string
	phases  []api.EventPhase
}

// parseCriteria reads ?project=P&phases=A,B, both required (BadRequest
// without them, or for an unknown phase; with cancelable, a terminal phase
// is refused too).
func parseCriteria(q url.Values, cancelable bool) (criteria, error) {
	c := criteria{project: q.Get("project")}
	if c.project == "" {
		return c, api.NewBadRequest("the query parameter project is required")
	}
	raw := q.Get("phases")
	if raw == "" {
		return c, api.NewBadRequest("the query parameter phases is required (a comma-separated list of worker phases)")
	}
	for _, p := range strings.Split(raw, ",") {
		ph := api.EventPhase(strings.ToUpper(strings.TrimSpace(p)))
		switch {
		case !ph.Known():
			return c, api.NewBadRequest("phases: %q is not a worker phase", p)
		case cancelable && ph.Terminal():
			return c, api.NewBadRequest("phases: %s is terminal: only PENDING, STARTING, RUNNING and UNKNOWN events can be canceled", ph)
		}
		if !slices.Contains(c.phases, ph) {
			c.phases = append(c.phases, ph)
		}
	}
	return c, nil
}

// matching lists the events of ns in project whose worker is in one of
// phases, as the system.
func (s *Service) matching(ctx context.Context, ns string, c criteria) ([]*api.Event, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	l, err := reg.List(system(ctx), api.KindEvent, ns, api.ListOptions{LabelSelector: api.LabelEventProject + "=" + c.project})
	if err != nil {
		return nil, err
	}
	var out []*api.Event
	for _, obj := range l.Items {
		ev, err := decodeEvent(obj)
		if err != nil {
			return nil, err
		}
		if ev.Spec.Project == c.project && slices.Contains(c.phases, ev.Status.Worker.Phase) {
			out = append(out, ev)
		}
	}
	return out, nil
}

// handleCancelMany serves POST /namespaces/{ns}/events/cancel?project=P&phases=A,B:
// every matching event is canceled as by Cancel (one that became terminal
// meanwhile is skipped). It answers the EventList of the canceled events.
func (s *Service) handleCancelMany(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
	c, err := parseCriteria(req.Query, true)
	if err != nil {
		return registry.ActionResult{}, err
	}
	evs, err := s.matching(ctx, req.Namespace, c)
	if err != nil {
		return registry.ActionResult{}, err
	}
	var out []*api.Object
	for _, ev := range evs {
		done, err := s.Cancel(ctx, ev.Namespace, ev.Name)
		if errors.Is(err, api.ErrConflict) || errors.Is(err, api.ErrNotFound) {
			continue
		}
		if err != nil {
			return registry.ActionResult{}, err
		}
		obj, err := api.FromResource(done)
		if err != nil {
			return registry.ActionResult{}, err
		}
		out = append(out, obj)
	}
	return registry.ActionResult{Object: eventList(out)}, nil
}

// handleDeleteMany serves DELETE /namespaces/{ns}/events?project=P&phases=A,B:
// every matching event is deleted (its Secret and runtime resources
// follow: the garbage collector and the observer). It answers the EventList
// of the events whose deletion it asked for.
func (s *Service) handleDeleteMany(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
	c, err := parseCriteria(req.Query, false)
	if err != nil {
		return registry.ActionResult{}, err
	}
	reg, err := s.registry()
	if err != nil {
		return registry.ActionResult{}, err
	}
	evs, err := s.matching(ctx, req.Namespace, c)
	if err != nil {
		return registry.ActionResult{}, err
	}
	var out []*api.Object
	for _, ev := range evs {
		obj, _, err := reg.Delete(system(ctx), api.KindEvent, ev.Namespace, ev.Name,
			api.DeleteOptions{Preconditions: api.Preconditions{UID: ev.UID}})
		if errors.Is(err, api.ErrNotFound) || errors.Is(err, api.ErrConflict) {
			continue
		}
		if err != nil {
			return registry.ActionResult{}, err
		}
		out = append(out, obj)
	}
	return registry.ActionResult{Object: eventList(out)}, nil
}

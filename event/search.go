package event

import (
	"context"
	"slices"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
)

// Filter selects events: each set field must match (Phases: the worker is
// in one of them); LabelSelector is the list's.
type Filter struct {
	Project, Source, Type string
	Phases                []api.EventPhase
	LabelSelector         string
}

// Match reports whether ev passes f (LabelSelector aside).
func (f Filter) Match(ev *api.Event) bool {
	return (f.Project == "" || ev.Spec.Project == f.Project) &&
		(f.Source == "" || ev.Spec.Source == f.Source) &&
		(f.Type == "" || ev.Spec.Type == f.Type) &&
		(len(f.Phases) == 0 || slices.Contains(f.Phases, ev.Status.Worker.Phase))
}

// handleSearch serves GET /namespaces/{ns}/events/search?project=&source=&type=&phases=&labelSelector=:
// the events of the namespace that match every parameter given, as an
// EventList, read with the caller's own right to list events.
// Errors: BadRequest (an unknown phase, a bad selector), Forbidden.
func (s *Service) handleSearch(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
	q := req.Query
	f := Filter{Project: q.Get("project"), Source: q.Get("source"), Type: q.Get("type"), LabelSelector: q.Get("labelSelector")}
	if raw := q.Get("phases"); raw != "" {
		for _, p := range strings.Split(raw, ",") {
			ph := api.EventPhase(strings.ToUpper(strings.TrimSpace(p)))
			if !ph.Known() {
				return registry.ActionResult{}, api.NewBadRequest("phases: %q is not a worker phase", p)
			}
			f.Phases = append(f.Phases, ph)
		}
	}
	reg, err := s.registry()
	if err != nil {
		return registry.ActionResult{}, err
	}
	sel := f.LabelSelector
	if f.Project != "" {
		if sel != "" {
			sel += ","
		}
		sel += api.LabelEventProject + "=" + f.Project
	}
	l, err := reg.List(ctx, api.KindEvent, req.Namespace, api.ListOptions{LabelSelector: sel})
	if err != nil {
		return registry.ActionResult{}, err
	}
	var out []*api.Object
	for _, obj := range l.Items {
		ev, err := decodeEvent(obj)
		if err != nil {
			return registry.ActionResult{}, err
		}
		if f.Match(ev) {
			out = append(out, obj)
		}
	}
	return registry.ActionResult{Object: eventList(out)}, nil
}

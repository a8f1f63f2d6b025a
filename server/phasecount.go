package server

import (
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"

	"cairn.dev/cairn/api"
)

// PhaseCounts: a client that lists a collection with Accept
// api.PhaseCountMediaType gets an api.PhaseCount, how many objects are in
// each phase by namespace, instead of the objects: an overview at ten
// thousand objects reads a few hundred bytes rather than megabytes. It is
// a list in every other way (the same route, authorization, selectors and
// metrics resource; the metrics verb is "count").

// phaseCountV1 is the offer of a PhaseCount.
var phaseCountV1 = mediaOffer{as: api.KindPhaseCount, g: api.Group, v: api.Version}

// wantsPhaseCount reports whether a request asks for a PhaseCount.
func wantsPhaseCount(r *http.Request) bool {
	return negotiate(r, plainJSON, phaseCountV1) == phaseCountV1
}

// checkPhaseCount refuses what a PhaseCount cannot answer: a watch, and
// a limit or continue token (every object is counted). It returns nil
// for a request that does not ask for a PhaseCount.
func checkPhaseCount(r *http.Request, watch bool, opts api.ListOptions) error {
	if !wantsPhaseCount(r) {
		return nil
	}
	switch {
	case watch:
		return badField("watch", "a PhaseCount is not watched: watch the collection as JSON from the count's resourceVersion")
	case opts.Limit != 0:
		return badField("limit", "a PhaseCount counts every object: remove limit")
	case opts.Continue != "":
		return badField("continue", "a PhaseCount counts every object: remove continue")
	}
	return nil
}

// servePhaseCount answers a list request asking for a PhaseCount: it
// reads the list page by page (never holding it whole) and counts. It
// blocks for the whole read. Errors are the list's, answered as Status.
func (s *Server) servePhaseCount(w *statusWriter, r *http.Request, rt *route, opts api.ListOptions) {
	ctx := r.Context()
	lr, err := s.reg.OpenList(ctx, rt.kind.Kind, rt.ns, opts)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	t := phaseTally{kind: rt.kind.Kind}
	for {
		obj, err := lr.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		t.add(obj)
	}
	out := t.result(api.MaxPhaseCountDeleting)
	out.Metadata.ResourceVersion = lr.ResourceVersion()
	s.writeAs(w, r, phaseCountV1, out)
}

// phaseStatus is what phaseOf reads of a status.
type phaseStatus struct {
	Phase  string `json:"phase"`
	Worker *struct {
		Phase string `json:"phase"`
	} `json:"worker"`
	LastError *struct {
		Message string `json:"message"`
	} `json:"lastError"`
	Conditions []struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	} `json:"conditions"`
}

// phaseOf returns the phase o, of kind, counts in (see api.PhaseGroup)
// and whether its status carries a lastError with a message. A status
// that does not decode as an object counts as no phase.
func phaseOf(kind string, o *api.Object) (phase string, lastError bool) {
	var st phaseStatus
	if raw := o.Field(api.FieldStatus); len(raw) > 0 {
		_ = json.Unmarshal(raw, &st) // a status of another shape has no phase
	}
	lastError = st.LastError != nil && st.LastError.Message != ""
	switch {
	case kind == api.KindEvent:
		if st.Worker != nil && st.Worker.Phase != "" {
			return st.Worker.Phase, lastError
		}
		return "PENDING", lastError
	case st.Phase != "":
		return st.Phase, lastError
	}
	for _, c := range st.Conditions {
		if c.Type == "Reachable" {
			if c.Status == "True" {
				return "Reachable", lastError
			}
			return "Unreachable", lastError
		}
	}
	return "", lastError
}

// phaseTally counts objects of kind by namespace and phase, and keeps
// those being deleted.
type phaseTally struct {
	kind     string
	groups   map[[2]string]*api.PhaseGroup
	deleting []api.PhaseCountObject
}

// add counts o.
func (t *phaseTally) add(o *api.Object) {
	phase, lastError := phaseOf(t.kind, o)
	if t.groups == nil {
		t.groups = map[[2]string]*api.PhaseGroup{}
	}
	k := [2]string{o.Namespace, phase}
	g := t.groups[k]
	if g == nil {
		g = &api.PhaseGroup{Namespace: o.Namespace, Phase: phase}
		t.groups[k] = g
	}
	g.Count++
	if lastError {
		g.LastError++
	}
	if o.DeletionTimestamp != nil {
		t.deleting = append(t.deleting, api.PhaseCountObject{Namespace: o.Namespace, Name: o.Name, Phase: phase,
			LastError: lastError, DeletionTimestamp: *o.DeletionTimestamp})
	}
}

// result is the PhaseCount of what was added, of kind counted: groups
// sorted by namespace and phase, at most maxDeleting of the objects being
// deleted, the oldest deletions first.
func (t *phaseTally) result(maxDeleting int) *api.PhaseCount {
	out := &api.PhaseCount{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindPhaseCount},
		Counted: t.kind, Groups: []api.PhaseGroup{}}
	for _, g := range t.groups {
		out.Groups = append(out.Groups, *g)
	}
	slices.SortFunc(out.Groups, func(a, b api.PhaseGroup) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Phase, b.Phase))
	})
	d := slices.Clone(t.deleting)
	slices.SortFunc(d, func(a, b api.PhaseCountObject) int {
		return cmp.Or(a.DeletionTimestamp.Compare(b.DeletionTimestamp), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	if len(d) > maxDeleting {
		out.DeletingOmitted = len(d) - maxDeleting
		d = d[:maxDeleting]
	}
	out.Deleting = d
	return out
}

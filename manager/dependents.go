package manager

import (
	"net/http"
	"strings"
	"sync/atomic"

	"cairn.dev/cairn/api"
)

// DependentsSource answers what deleting an object would take, from the
// garbage collector's dependency graph (gc.Collector.Dependents).
type DependentsSource interface {
	// Dependents returns the tree of what deleting kind ns/name would
	// take. It does not block beyond a lock. Errors: NotFound for an
	// object the graph does not hold; another error while the graph is
	// being built.
	Dependents(kind, ns, name string) (*api.Dependents, error)
}

// dependents holds the process's DependentsSource, set by the controller
// that keeps the graph (SetDependents).
type dependents struct {
	src atomic.Pointer[DependentsSource]
}

// SetDependents makes src the process's answer to what a deletion would
// take (Manager.Dependents): the garbage collector's warm part calls it.
// It never blocks.
func (p *Process) SetDependents(src DependentsSource) {
	if p.deps != nil {
		p.deps.src.Store(&src)
	}
}

// Dependents returns the source SetDependents set, nil when no
// controller of this process keeps a dependency graph. It never blocks.
func (m *Manager) Dependents() DependentsSource {
	if s := m.deps.src.Load(); s != nil {
		return *s
	}
	return nil
}

// dependents serves GET .../{plural}/{name}/dependents on a controller
// process's own address (Handler), for API servers that forward it to the
// leader: whoever may read the object there may ask here.
func (h *handler) dependents(w http.ResponseWriter, r *http.Request) {
	segs := strings.Split(strings.TrimPrefix(r.URL.Path, api.BasePath+"/"), "/")
	var ns, plural, name string
	switch {
	case len(segs) == 5 && segs[0] == "namespaces":
		ns, plural, name = segs[1], segs[2], segs[3]
	case len(segs) == 3:
		plural, name = segs[0], segs[1]
	default:
		writeStatus(w, api.NewStatus(api.ReasonNotFound, "the path %q is not served by a controller manager", r.URL.Path))
		return
	}
	exists, ok := h.allowed(w, r, strings.TrimSuffix(r.URL.Path, "/"+api.ActionDependents))
	if !ok {
		return
	}
	k, known, err := h.kind(r.Context(), plural)
	switch {
	case err != nil:
		writeStatus(w, err)
		return
	case !known || k.Namespaced != (ns != ""):
		writeStatus(w, api.NewStatus(api.ReasonNotFound, "the server does not serve the resource %q here", plural))
		return
	case !exists:
		writeStatus(w, api.NewNotFound(k.Kind, name))
		return
	}
	src := h.m.Dependents()
	if !h.m.Leading() || src == nil {
		st := api.NewStatus(api.ReasonUnavailable, "this controller manager does not lead the controllers (or keeps no dependency graph) now; try again")
		st.Details = &api.StatusDetails{RetryAfterSeconds: 1}
		writeStatus(w, st)
		return
	}
	d, err := src.Dependents(k.Kind, ns, name)
	if err != nil {
		st := api.NewStatus(api.ReasonUnavailable, "the garbage collector's graph cannot answer yet (%v); try again", err)
		st.Details = &api.StatusDetails{RetryAfterSeconds: 1}
		writeStatus(w, st)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

package daemon

import (
	"context"

	"cairn.dev/cairn/api"
)

// dependentsSource answers what a deletion would take from this server's
// garbage collector graph while it leads the controllers
// (server.DependentsSource); otherwise the server forwards to the leader.
type dependentsSource struct{ d *Daemon }

func (s dependentsSource) Dependents(_ context.Context, kind, ns, name string) (*api.Dependents, bool, error) {
	m := s.d.manager
	if m == nil || !m.Leading() {
		return nil, false, nil
	}
	src := m.Dependents()
	if src == nil {
		return nil, true, api.NewStatus(api.ReasonUnavailable, "the controllers this server runs keep no dependency graph (no garbage collector)")
	}
	out, err := src.Dependents(kind, ns, name)
	return out, true, err
}

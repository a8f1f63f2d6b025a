package local

import (
	"context"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// The in-process client writes statuses in batches.
var _ client.StatusBatcher = (*localClient)(nil)

// UpdateStatuses writes the statuses of objs through the registry's
// UpdateStatuses: one store transaction per 64 objects, each write with
// its own outcome (see client.StatusBatcher and
// registry.Registry.UpdateStatuses for the errors).
func (c *localClient) UpdateStatuses(ctx context.Context, objs []*api.Object) []client.StatusResult {
	rs := c.r.UpdateStatuses(c.caller(ctx), objs)
	out := make([]client.StatusResult, len(rs))
	for i, r := range rs {
		out[i] = client.StatusResult{Object: r.Object, Err: r.Err}
	}
	return out
}

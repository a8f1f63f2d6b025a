package client

import (
	"context"

	"cairn.dev/cairn/api"
)

// StatusBatcher is implemented by clients that can write the statuses of
// several objects for less than one UpdateStatus each: the in-process
// client (package client/local) commits them in one store transaction per
// 64 objects. Controllers find it with a type assertion on their
// Interface; UpdateStatuses below falls back to one UpdateStatus per
// object for clients without it (the HTTP client).
type StatusBatcher interface {
	// UpdateStatuses writes the status of each of objs as UpdateStatus
	// would (a compare-and-swap on its resourceVersion when set) and
	// returns one result per object, in objs' order. Each write has its
	// own outcome: one that fails (Conflict, NotFound, Invalid, Forbidden,
	// ...) does not keep the others from being written. Two objects with
	// the same name are written one after the other, in order. It blocks
	// until every write is committed or has failed. When ctx ends first,
	// or the store fails (Timeout, ServiceUnavailable), the writes not yet
	// committed fail with the error UpdateStatus would give them, and may
	// or may not have been applied, as with UpdateStatus. It never returns
	// fewer results than objs.
	UpdateStatuses(ctx context.Context, objs []*api.Object) []StatusResult
}

// StatusResult is the outcome of one write of UpdateStatuses: the object
// as stored, or the error that kept it from being written (then Object is
// nil).
type StatusResult struct {
	Object *api.Object
	Err    error
}

// UpdateStatuses writes the statuses of objs through c: in one call when c
// is a StatusBatcher, else with one UpdateStatus per object, in order. Its
// results and blocking are StatusBatcher.UpdateStatuses'.
func UpdateStatuses(ctx context.Context, c Interface, objs []*api.Object) []StatusResult {
	if b, ok := c.(StatusBatcher); ok {
		return b.UpdateStatuses(ctx, objs)
	}
	out := make([]StatusResult, len(objs))
	for i, o := range objs {
		out[i].Object, out[i].Err = c.UpdateStatus(ctx, o)
	}
	return out
}

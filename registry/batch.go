package registry

import (
	"context"
	"errors"
	"slices"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/registry/internal/usage"
	"cairn.dev/cairn/store"
)

// StatusResult is the outcome of one write of UpdateStatuses: the object
// as stored, or the error that kept it from being written (then Object is
// nil).
type StatusResult struct {
	Object *api.Object
	Err    error
}

// UpdateStatuses writes the status of each of objs, each exactly as
// UpdateStatus would (authorized for the caller in ctx, a compare-and-swap
// on its metadata.resourceVersion when set, the kind's status hooks and
// validation), but commits them together, in one etcd transaction per
// MaxTxnItems objects, through the commit path of a single write (run:
// the same reads, retries of lost races and settling of commits whose
// outcome is unknown). It is for controllers that write many statuses at
// once.
//
// Each write keeps its own outcome, returned in objs' order: one that
// fails (Conflict for a stale resourceVersion, NotFound, Forbidden,
// Invalid, ...) fails alone and the others are committed without it; when
// a transaction fails as a whole for another reason (a namespace limit,
// the store full, a transaction too large), its writes are committed one
// by one, each with its own outcome. Writes without a resourceVersion
// retry lost races as UpdateStatus does. Two objects with the same key are
// written one after the other, in order (the second, if it names the same
// resourceVersion, then fails with Conflict).
//
// It blocks on the store: a read per object the watch cache does not hold
// at its latest version (more for stale reads and retries) and the
// transactions. Every write fails with Unauthorized when ctx has no
// caller. The writes not committed yet fail together when the store fails
// or ctx ends (the error UpdateStatus gives then: ServiceUnavailable when
// nothing was written, Timeout when a write may have been applied or not,
// or when ctx ended while they waited for their turn or a retry). It is
// safe for concurrent use; it never returns fewer results than objs.
func (r *Registry) UpdateStatuses(ctx context.Context, objs []*api.Object) []StatusResult {
	out := make([]StatusResult, len(objs))
	u, err := caller(ctx)
	if err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	// Admit every write, then split them into rounds in which each
	// object is written once, in order.
	items := make([]*txnItem, len(objs))
	keys := make([]string, len(objs))
	for i, o := range objs {
		k, _, err := r.admit(ctx, o.Kind, authz.Attributes{Verb: authz.VerbUpdate, Subresource: "status",
			Namespace: o.Namespace, Name: o.Name})
		if err == nil {
			items[i] = r.newWrite(o, OpUpdateStatus)
			err = items[i].err
		}
		if err != nil {
			out[i].Err = err
			continue
		}
		keys[i] = r.key(k, items[i].namespace(), o.Name)
	}
	for _, round := range batchRounds(keys) {
		for len(round) > 0 {
			chunk := round[:min(len(round), MaxTxnItems)]
			round = round[len(chunk):]
			r.commitStatuses(ctx, u, items, chunk, out)
		}
	}
	return out
}

// batchRounds splits writes to keys (by index; "" for a write that is not
// made) into rounds in which each key appears once: the n-th write to a
// key goes to round n, and each round keeps the writes' order. Writes to
// one object then commit one after the other, in order, and a round's
// keys can share a transaction.
func batchRounds(keys []string) [][]int {
	var rounds [][]int
	seen := map[string]int{}
	for i, key := range keys {
		if key == "" {
			continue
		}
		n := seen[key]
		seen[key] = n + 1
		if n == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[n] = append(rounds[n], i)
	}
	return rounds
}

// commitStatuses commits the status writes items[i], for i in live
// (distinct objects, already authorized for u), in one store transaction
// through run, the commit path of every single write, with its retries of
// lost races and its settling of commits whose outcome is unknown; each
// write keeps its own outcome, in out (through apiError). A write that
// fails alone (run names it: NotFound, a Conflict on its resourceVersion,
// Invalid, Forbidden, ...) is dropped and the others are committed
// without it. A transaction refused as a whole for a reason one write
// alone may not have (splittable) is committed write by write. Any other
// failure (the store, ctx, a commit whose outcome stayed unknown, objects
// that keep changing) is every remaining write's. It blocks as run does,
// once per dropped write more.
func (r *Registry) commitStatuses(ctx context.Context, u identity.User, items []*txnItem, live []int, out []StatusResult) {
	live = slices.Clone(live)
	fail := func(live []int, err error) {
		for _, i := range live {
			out[i].Err = apiError(err, items[i].k.Kind, items[i].name())
		}
	}
	for len(live) > 0 {
		batch := make([]*txnItem, len(live))
		for j, i := range live {
			batch[j] = items[i]
		}
		r.prefetch(ctx, batch)
		res, failed, err := r.run(ctx, u, batch, false)
		var unsure *unknownOutcome
		switch {
		case err == nil:
			for j, i := range live {
				out[i].Object = res[j].Object
			}
			return
		case failed >= 0 && !errors.As(err, &unsure):
			fail(live[failed:failed+1], err)
			live = slices.Delete(live, failed, failed+1)
		case len(live) > 1 && splittable(err):
			for _, i := range live {
				r.commitStatuses(ctx, u, items, []int{i}, out)
			}
			return
		default:
			fail(live, err)
			return
		}
	}
}

// prefetch reads, in one store round trip, the objects the writes items
// replace that the watch cache does not hold, from the local etcd member
// (a serializable read), and leaves them in each item's read, where run's
// first attempt takes them instead of reading each alone (a version the
// write does not name is read again, linearizably, as readGuard does). A
// failed read leaves them unset: run then reads and fails as it does.
func (r *Registry) prefetch(ctx context.Context, items []*txnItem) {
	var keys []string
	var at []*txnItem
	for _, it := range items {
		key := r.key(it.k, it.namespace(), it.name())
		if _, ok := r.cached(it.k, key); ok {
			continue
		}
		keys, at = append(keys, key), append(at, it)
	}
	if len(keys) < 2 {
		return
	}
	kvs, err := r.store.GetStaleMany(ctx, keys)
	if err != nil {
		return
	}
	for n, it := range at {
		if kvs[n] == nil {
			continue
		}
		if cur, err := r.fromStore(it.k, kvs[n]); err == nil {
			it.read = cur
		}
	}
}

// splittable reports whether a transaction of several writes failed as a
// whole, for a reason one of its writes alone may not have, and before
// etcd applied any of it: a namespace limit, the store full, a
// transaction beyond the store's size limits. (At the edge of etcd's quota
// a write may be applied and still refused for space; a write of it
// committed alone then fails its compare-and-swap: Conflict.)
func splittable(err error) bool {
	var exceeded *usage.ExceededError
	var st *api.Status
	return errors.As(err, &exceeded) || errors.Is(err, store.ErrNoSpace) || errors.Is(err, store.ErrTooLarge) ||
		errors.As(err, &st) && st.Reason == api.ReasonInvalid
}

package registry

import (
	"context"
	"errors"

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
// validation), but commits them together: the writes are read in one
// store round trip and committed in one etcd transaction per MaxTxnItems
// objects. It is for controllers that write many statuses at once.
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
// It blocks on the store: one read per transaction (more for stale reads
// and retries) and the transactions. Every write fails with Unauthorized
// when ctx has no caller. The writes not committed yet fail together when
// the store fails or ctx ends during a read or a transaction (the store's
// error, as UpdateStatus gives it: Timeout, ServiceUnavailable, ...; a
// write may then have been applied or not), or when ctx ends while they
// wait for their turn or a retry (Timeout: nothing was written). It is
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
			batch := make([]*txnItem, len(chunk))
			for j, i := range chunk {
				batch[j] = items[i]
			}
			res, errs := r.runEach(ctx, u, batch)
			for j, i := range chunk {
				if errs[j] != nil {
					out[i].Err = apiError(errs[j], items[i].k.Kind, items[i].name())
				} else {
					out[i].Object = res[j].Object
				}
			}
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

// runEach plans the status writes items (distinct objects, already
// authorized for u) and commits them in one store transaction, each with
// its own outcome: a write whose plan fails, or whose compare-and-swap
// fails for good, is dropped from the transaction and the others are
// committed without it; a write that lost a race (a stale read, an
// unconditional write overtaken) is planned again, as run does. When the
// transaction fails for another reason than a condition, each write is
// committed alone. Errors are per write (store errors or *api.Status, as
// run's); a failure of the store or of ctx is every remaining write's.
func (r *Registry) runEach(ctx context.Context, u identity.User, items []*txnItem) ([]TxnResult, []error) {
	res := make([]TxnResult, len(items))
	errs := make([]error, len(items))
	failAll := func(live []int, err error) {
		for _, i := range live {
			errs[i] = err
		}
	}
	live := make([]int, len(items))
	for i := range items {
		live[i] = i
	}
	ctx, unlock, err := r.lockUnconditional(ctx, items)
	if err != nil {
		failAll(live, err)
		return res, errs
	}
	defer unlock()
	attempts := make([]int, len(items)) // races each write lost
	plans := make([]*plan, len(items))
	for round := 0; len(live) > 0; round++ {
		curs, err := r.readEach(ctx, items, live, attempts)
		if err != nil {
			failAll(live, err)
			break
		}
		var ready, lost []int
		for j, i := range live {
			p, err := r.planStatus(ctx, u, items[i], curs[j])
			switch {
			case errors.Is(err, store.ErrPrecondition):
				lost = append(lost, i)
			case err != nil:
				errs[i] = err
			default:
				plans[i], ready = p, append(ready, i)
			}
		}
		committed, retry := r.commitEach(ctx, plans, ready, res, errs)
		for _, i := range append(lost, retry...) {
			if err := r.explain(ctx, items, i, plans[i]); err != nil {
				errs[i] = err
				continue
			}
			if attempts[i]++; attempts[i] > items[i].maxAttempts() {
				errs[i] = items[i].exhausted()
			}
		}
		live = live[:0]
		for _, i := range append(ready, lost...) {
			if errs[i] == nil && !committed[i] {
				live = append(live, i)
			}
		}
		if len(live) == 0 {
			break
		}
		if round >= maxUnconditionalAttempts {
			failAll(live, api.NewStatus(api.ReasonConflict, "the objects keep changing; retry"))
			break
		}
		if err := pause(ctx, round); err != nil {
			failAll(live, err)
			break
		}
	}
	return res, errs
}

// readEach reads the objects the writes live (indices into items) replace,
// one entry per live write, nil for an object that does not exist. A write
// that has not lost a race yet (attempts[i] == 0) takes the version the
// watch cache holds, or is read from the local etcd member, with the
// others in one round trip, and confirmed with a linearizable read when
// found at another version than it expects or not found (as readGuard
// does); one that has lost a race is read linearizably. It fails only when
// the store does.
func (r *Registry) readEach(ctx context.Context, items []*txnItem, live []int, attempts []int) ([]*stored, error) {
	out := make([]*stored, len(live))
	var keys []string
	var at []int // positions in live of keys
	for j, i := range live {
		if attempts[i] != 0 {
			continue
		}
		it := items[i]
		key := r.key(it.k, it.namespace(), it.name())
		if cur, ok := r.cached(it.k, key); ok {
			if rv := it.obj.ResourceVersion; rv == "" || rv == cur.obj.ResourceVersion {
				out[j] = cur
				continue
			}
		}
		keys = append(keys, key)
		at = append(at, j)
	}
	kvs, err := r.store.GetStaleMany(ctx, keys)
	if err != nil {
		return nil, err
	}
	stale := make([]*store.KV, len(live))
	for n, j := range at {
		stale[j] = kvs[n]
	}
	for j, i := range live {
		if out[j] != nil {
			continue // from the watch cache
		}
		it := items[i]
		if kv := stale[j]; kv != nil {
			cur, err := r.fromStore(it.k, kv)
			if err != nil {
				return nil, err
			}
			if rv := it.obj.ResourceVersion; rv == "" || rv == cur.obj.ResourceVersion {
				out[j] = cur
				continue
			}
		}
		cur, err := r.read(ctx, it.k, it.namespace(), it.name())
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			out[j] = cur
		}
	}
	return out, nil
}

// planStatus plans the status write it over cur, the object as read (nil:
// not found, store.ErrNotFound), as planItem plans an update.
func (r *Registry) planStatus(ctx context.Context, u identity.User, it *txnItem, cur *stored) (*plan, error) {
	if cur == nil {
		return nil, store.ErrNotFound
	}
	obj := it.obj
	if obj.ResourceVersion == "" {
		obj = obj.DeepCopy()
		obj.ResourceVersion = cur.obj.ResourceVersion
	}
	return r.planUpdate(ctx, r.admission(it.op, u), it.k, obj, cur, nil)
}

// commitEach commits plans[i] for every i of ready in one transaction,
// setting res[i] for the writes committed, which it returns. When the
// transaction fails for a condition, nothing is committed and retry holds
// the writes whose own conditions fail (the others are tried again with
// them). When it is refused as a whole before reaching etcd's log (see
// splittable), each write is committed alone: those whose condition fails
// go to retry, other failures to errs. Any other failure (the store timed
// out or is unavailable, ctx ended) is every ready write's, in errs.
func (r *Registry) commitEach(ctx context.Context, plans []*plan, ready []int, res []TxnResult, errs []error) (committed map[int]bool, retry []int) {
	committed = map[int]bool{}
	if len(ready) == 0 {
		return committed, nil
	}
	ps := make([]*plan, len(ready))
	for j, i := range ready {
		ps[j] = plans[i]
	}
	rev, err := r.commitAll(ctx, ps, false)
	switch {
	case err == nil:
		for _, i := range ready {
			committed[i] = true
			res[i] = TxnResult{Object: plans[i].result(rev), Gone: plans[i].gone}
		}
		return committed, nil
	case errors.Is(err, store.ErrPrecondition):
		failed, err := r.failing(ctx, ps)
		if err != nil {
			for _, i := range ready {
				errs[i] = err
			}
			return committed, nil
		}
		for _, f := range failed {
			retry = append(retry, ready[f])
		}
		return committed, retry
	case len(ready) > 1 && splittable(err):
		for _, i := range ready {
			c, rt := r.commitEach(ctx, plans, []int{i}, res, errs)
			if c[i] {
				committed[i] = true
			}
			retry = append(retry, rt...)
		}
		return committed, retry
	}
	for _, i := range ready {
		errs[i] = err
	}
	return committed, nil
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

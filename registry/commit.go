package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/store"
)

// run plans items (already authorized for u) and commits them in one store
// transaction, retrying the races the single-object verbs retry: an
// unconditional write whose object changed, a create whose owners or
// namespace moved, a generated name that collided, a stale first read. It
// is the one commit path of Create, Update, UpdateStatus, Patch, Delete and
// Txn.Commit. Unconditional writes first wait for the other unconditional
// writes of this process to the same objects, and retries wait a jittered
// backoff (see retry.go); when ctx ends meanwhile, it returns Timeout.
//
// Under a store timeout (store.WithTimeout) the whole write, retries
// included, is bounded by it (store.Deadline), each commit by a share of
// it (store.Attempt); a commit the store did not take, or whose outcome is
// unknown, is settled and retried as outcome.go tells.
//
// With dry, the plans are confirmed and checked against the limits but
// not written (commitAll), and the results are the objects as they would
// be: a create without a resourceVersion, an update at its current one.
//
// It returns the results in item order; or the index of the item that
// failed (-1 when the failure is the transaction's as a whole) and its
// error, a store error, an *unknownOutcome or an *api.Status (see
// apiError).
func (r *Registry) run(ctx context.Context, u identity.User, items []*txnItem, dry bool) ([]TxnResult, int, error) {
	ctx, cancel := store.Deadline(ctx)
	defer cancel()
	ctx, unlock, err := r.lockUnconditional(ctx, items)
	if err != nil {
		return nil, -1, err
	}
	defer unlock()
	limit := 0
	for _, it := range items {
		limit = max(limit, it.maxAttempts())
	}
	var unsure [][]*plan // commits sent whose outcome is unknown (outcome.go)
	// fail is the error that ends the write: an unknownOutcome while a
	// commit is unsure.
	fail := func(err error) error {
		if len(unsure) == 0 {
			return err
		}
		return unknown(unsure, items, err)
	}
	plans := make([]*plan, len(items))
	lost, failures := 0, 0 // races lost; store failures
	for attempt := 0; ; attempt++ {
		failed, i, err := r.planAll(ctx, u, items, attempt, plans)
		if err != nil {
			return nil, i, fail(err)
		}
		if len(failed) == 0 {
			rev, err := r.commitAttempt(ctx, plans, dry)
			switch {
			case err == nil:
				if dry {
					rev = 0
				}
				return results(plans, rev), -1, nil
			case transient(err):
				if errors.Is(err, store.ErrTimeout) && !dry {
					unsure = append(unsure, slices.Clone(plans))
				}
				if res, done, err := r.settled(ctx, unsure, fail); done {
					return res, -1, err
				}
				if store.TimeoutOf(ctx) <= 0 || !store.Backoff(ctx, failures) {
					return nil, -1, fail(unavailable(err))
				}
				failures++
				continue
			case !errors.Is(err, store.ErrPrecondition):
				return nil, -1, fail(err)
			}
			// An unsure commit applied late makes this one fail.
			if res, done, err := r.settled(ctx, unsure, fail); done {
				return res, -1, err
			}
			if failed, err = r.failing(ctx, plans); err != nil {
				return nil, -1, fail(err)
			}
		}
		if i, err := r.lose(ctx, items, plans, failed, lost, limit); err != nil {
			return nil, i, fail(err)
		}
		lost++
	}
}

// planAll plans every item for this attempt into plans (see planItem). It
// returns the items whose conditional write read a newer version than its
// own (errStaleRead; their plans are nil); or the index of the item whose
// planning failed and its error, which ends the write.
func (r *Registry) planAll(ctx context.Context, u identity.User, items []*txnItem, attempt int, plans []*plan) ([]int, int, error) {
	pend := pendingOf(r, items)
	var failed []int
	for i, it := range items {
		p, err := r.planItem(ctx, u, it, attempt, pend)
		switch {
		case errors.Is(err, errStaleRead):
			failed = append(failed, i) // a conditional write read a newer version
		case err != nil:
			return nil, i, err
		}
		plans[i] = p
	}
	return failed, -1, nil
}

// lose handles a lost race: the failed items' conditions did not hold
// (lost races so far; limit: the most any item allows). It explains each
// failed item (explain) and then pauses (blocking for a jittered backoff,
// see retry.go) before the next attempt. It returns nil to try again; or
// the index of the item that ends the write (-1 for the transaction as a
// whole) and the error: explain's, the item's exhausted retries, Conflict
// when the transaction's objects keep changing, or pause's when ctx ends.
func (r *Registry) lose(ctx context.Context, items []*txnItem, plans []*plan, failed []int, lost, limit int) (int, error) {
	for _, i := range failed {
		if err := r.explain(ctx, items, i, plans[i]); err != nil {
			return i, err
		}
		if lost >= items[i].maxAttempts() {
			return i, items[i].exhausted()
		}
	}
	if lost >= limit {
		return -1, api.NewStatus(api.ReasonConflict, "the transaction's objects keep changing; retry")
	}
	if err := pause(ctx, lost); err != nil {
		return -1, err
	}
	return -1, nil
}

// settled settles the unsure commits (settle): done is true when the
// write ends there, with the results of the commit that was applied, or
// with the error fail makes of settle's.
func (r *Registry) settled(ctx context.Context, unsure [][]*plan, fail func(error) error) ([]TxnResult, bool, error) {
	res, ok, err := r.settle(ctx, unsure)
	switch {
	case err != nil:
		return nil, true, fail(err)
	case ok:
		return res, true, nil
	}
	return nil, false, nil
}

// commitAttempt is commitAll bounded by one attempt's share of the store
// timeout (store.Attempt).
func (r *Registry) commitAttempt(ctx context.Context, plans []*plan, dry bool) (int64, error) {
	ctx, cancel := store.Attempt(ctx)
	defer cancel()
	return r.commitAll(ctx, plans, dry)
}

// unavailable is the failure of a write whose last commit failed with err,
// a transient store failure, and which has no unsure commit: nothing was
// written, so it is store.ErrUnavailable even when err is a timeout (of a
// commit that wrote nothing: a dry run).
func unavailable(err error) error {
	if errors.Is(err, store.ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

// planItem plans one item; attempt > 0 reads linearizably (see
// readForWrite). An update's first attempt takes the object its item read
// already (txnItem.read, UpdateStatuses' prefetch) when it fits.
func (r *Registry) planItem(ctx context.Context, u identity.User, it *txnItem, attempt int, pend pending) (*plan, error) {
	switch it.op {
	case OpCreate:
		adm := r.admission(OpCreate, u)
		adm.manager, adm.applied = it.manager, it.applied
		return r.planCreate(ctx, adm, it.k, it.obj, pend)
	case OpUpdate, OpUpdateStatus:
		obj := it.obj
		conditional := obj.ResourceVersion != ""
		accept := func(s *stored) bool { return !conditional || s.obj.ResourceVersion == obj.ResourceVersion }
		cur, read := it.read, it.read != nil && attempt == 0 && accept(it.read)
		it.read = nil
		var err error
		if !read {
			if cur, err = r.readForWrite(ctx, it.k, obj.Namespace, obj.Name, attempt, accept); err != nil {
				return nil, err
			}
		}
		adm := r.admission(it.op, u)
		adm.manager = it.manager
		switch {
		case it.patchType == api.ApplyPatch:
			if obj, err = r.applyConfig(it.k, it.op, cur.obj, it.patch, it.manager, it.force); err != nil {
				return nil, err
			}
			adm.applied = true
			if !conditional {
				obj.ResourceVersion = cur.obj.ResourceVersion
			}
		case it.patch != nil:
			if obj, err = applyPatch(cur.obj, it.patch, it.patchType); err != nil {
				return nil, err
			}
			if !conditional {
				obj.ResourceVersion = cur.obj.ResourceVersion
			}
		case !conditional:
			obj = obj.DeepCopy()
			obj.ResourceVersion = cur.obj.ResourceVersion
		}
		return r.planUpdate(ctx, adm, it.k, obj, cur, pend)
	case OpDelete:
		pre := it.opts.Preconditions
		// A protected copy is confirmed by a linearizable read: a stale one
		// must not refuse a deletion the protection was lifted for.
		cur, err := r.readForWrite(ctx, it.k, it.delNS, it.delName, attempt, func(s *stored) bool {
			return (pre.UID == "" || pre.UID == s.obj.UID) && (pre.ResourceVersion == "" || pre.ResourceVersion == s.obj.ResourceVersion) &&
				!api.Protected(&s.obj.ObjectMeta)
		})
		if err != nil {
			return nil, err
		}
		return r.planDelete(ctx, r.admission(OpDelete, u), it.k, cur, it.opts, it.direct)
	}
	return &plan{self: it.conds, ops: it.ops}, nil
}

// pendingOf returns the creates among items, by key; nil for one item.
func pendingOf(r *Registry, items []*txnItem) pending {
	if len(items) < 2 {
		return nil
	}
	pend := pending{}
	for _, it := range items {
		if it.op == OpCreate {
			pend[r.key(it.k, it.obj.Namespace, it.obj.Name)] = it.obj.UID
		}
	}
	return pend
}

// commitAll commits plans in one store transaction, each condition once.
// It returns Invalid when they exceed the store's limits (checkTxnSize),
// Forbidden when they would take a namespace over its limits (limits.go),
// store.ErrNoSpace (checkSpace) when they do not fit in the store, and
// store.ErrPrecondition when a condition failed. With dry it makes the
// same checks and commits the conditions alone, writing nothing.
func (r *Registry) commitAll(ctx context.Context, plans []*plan, dry bool) (int64, error) {
	if err := r.checkSpace(plans); err != nil {
		return 0, err
	}
	if len(plans) == 1 {
		conds := r.conds(plans[0])
		if err := r.checkTxnSize(plans, len(conds), len(plans[0].ops)); err != nil {
			return 0, err
		}
		return r.commitWithinLimits(ctx, plans, conds, plans[0].ops, dry)
	}
	var conds []store.Cond
	var ops []store.Op
	namespaces := map[string]bool{}
	owners := map[ownerGuard]bool{}
	for _, p := range plans {
		conds = append(conds, p.self...)
		if p.ns != "" && !namespaces[p.ns] {
			namespaces[p.ns] = true
			conds = append(conds, r.namespaceGuards(p.ns)...)
		}
		for _, o := range p.owners {
			if !owners[o] {
				owners[o] = true
				conds = append(conds, store.Unchanged(o.key, o.rev))
			}
		}
		ops = append(ops, p.ops...)
	}
	if err := r.checkTxnSize(plans, len(conds), len(ops)); err != nil {
		return 0, err
	}
	return r.commitWithinLimits(ctx, plans, conds, ops, dry)
}

// failing returns the plans whose own conditions fail now, each checked by
// a transaction that writes nothing.
func (r *Registry) failing(ctx context.Context, plans []*plan) ([]int, error) {
	if len(plans) == 1 {
		return []int{0}, nil
	}
	var failed []int
	for i, p := range plans {
		_, err := r.store.Txn(ctx, r.conds(p))
		switch {
		case errors.Is(err, store.ErrPrecondition):
			failed = append(failed, i)
		case err != nil:
			return nil, err
		}
	}
	return failed, nil
}

// explain decides about item i, whose conditions failed (p is its plan,
// nil when planning found it stale): nil to try again, or the error that
// ends the write.
func (r *Registry) explain(ctx context.Context, items []*txnItem, i int, p *plan) error {
	it := items[i]
	switch it.op {
	case OpCreate:
		if p == nil {
			return nil
		}
		_, err := r.store.Get(ctx, p.key)
		switch {
		case err == nil && it.generate:
			rename(items, i)
			return nil
		case err == nil:
			return api.NewAlreadyExists(it.k.Kind, it.obj.Name)
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		if p.ns != "" {
			return r.explainNamespace(ctx, it.k, p.ns)
		}
		return nil // an owner moved
	case OpUpdate, OpUpdateStatus:
		if it.obj.ResourceVersion == "" {
			return nil
		}
		// The object or one of its guards (a new owner) moved, or the
		// first read was stale: only the object moving is a conflict.
		now, err := r.read(ctx, it.k, it.obj.Namespace, it.obj.Name)
		if err == nil && now.obj.ResourceVersion == it.obj.ResourceVersion {
			return nil
		}
		return api.NewConflict(it.k.Kind, it.obj.Name, "the object has been modified; read it again and retry")
	case OpDelete:
		return nil // the next read checks the preconditions again
	}
	return api.NewStatus(api.ReasonConflict, "a condition of the transaction's extra writes does not hold")
}

// rename gives the create items[i], whose generated name collided, a new
// one, and points the owner references to it (by uid) there.
func rename(items []*txnItem, i int) {
	c := items[i].obj
	c.Name = c.GenerateName + randomSuffix()
	for _, it := range items {
		if it.obj == nil {
			continue
		}
		for j := range it.obj.OwnerReferences {
			if o := &it.obj.OwnerReferences[j]; o.UID == c.UID {
				o.Name = c.Name
			}
		}
	}
}

// results are the objects plans leave once committed at revision rev (0:
// not committed, a dry run).
func results(plans []*plan, rev int64) []TxnResult {
	out := make([]TxnResult, len(plans))
	for i, p := range plans {
		if p.out != nil {
			out[i] = TxnResult{Object: p.result(rev), Gone: p.gone}
		}
	}
	return out
}

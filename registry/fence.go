package registry

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/store"
)

// maxFenceAttempts bounds how often a fenced write is tried again because
// its Lease was renewed between the read of the Lease and the commit.
const maxFenceAttempts = 5

// txn commits conds and ops in one store transaction (store.Txn). When ctx
// carries an api.Fence (api.WithFence: a controller writing as leader),
// the transaction also holds only if the fence's Lease is unchanged since
// it was read, here, in the fence's term: a leader that lost its Lease
// cannot commit, whatever its clock says. A renewal of the Lease between
// that read and the commit only makes the write try again.
//
// It returns store.Txn's results; with a fence also a NotLeader Conflict
// (api.NewNotLeader) when the Lease is not, or no longer, in the fence's
// term (taken over, released, deleted), and Forbidden when the caller may
// not read the Lease. It blocks on the store: the transaction, a read of
// the Lease when it changed since the last fenced write (fenceCache), and
// one more when the transaction's conditions fail.
func (r *Registry) txn(ctx context.Context, conds []store.Cond, ops ...store.Op) (int64, error) {
	f, ok := api.FenceFrom(ctx)
	if !ok {
		return r.store.Txn(ctx, conds, ops...)
	}
	if err := r.checkTxnSize(nil, len(conds)+1, len(ops)); err != nil {
		return 0, err
	}
	k, err := r.fenceKind(ctx, f)
	if err != nil {
		return 0, err
	}
	key := r.key(k, "", f.Lease)
	for attempt := 0; ; attempt++ {
		rev, err := r.fenceRevision(ctx, k, f, attempt > 0)
		if err != nil {
			return 0, err
		}
		n, err := r.store.Txn(ctx, append(slices.Clip(conds), store.Unchanged(key, rev)), ops...)
		if !errors.Is(err, store.ErrPrecondition) {
			return n, err
		}
		// Which condition failed: the write's own, or the fence's?
		cur, err := r.store.Get(ctx, key)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return 0, api.NewNotLeader(f, "")
		case err != nil:
			return 0, err
		case cur.ModRevision == rev:
			return 0, store.ErrPrecondition
		case attempt+1 >= maxFenceAttempts:
			return 0, api.NewStatus(api.ReasonConflict, "the Lease %q kept changing while a write fenced by it was committed; retry", f.Lease)
		}
	}
}

// fenceCache remembers, per Lease name, the last version of the Lease a
// fenced write read: its revision, uid and spec. Fenced writes then need
// no read of their own while the Lease does not change: a stale entry only
// makes a write's transaction fail, and the Lease is read again. Its zero
// value is ready; it is safe for concurrent use.
type fenceCache struct{ m sync.Map } // lease name → fenceSeen

// fenceSeen is one version of a Lease.
type fenceSeen struct {
	rev  int64
	uid  string
	spec api.LeaseSpec
}

// fenceKind authorizes the caller in ctx to read f's Lease, which a fence
// reveals (its holder), and returns the Lease kind.
func (r *Registry) fenceKind(ctx context.Context, f api.Fence) (*Kind, error) {
	u, err := caller(ctx)
	if err != nil {
		return nil, err
	}
	k, err := r.Lookup(api.KindLease)
	if err != nil {
		return nil, err
	}
	if err := r.authorize(ctx, k, u, authz.Attributes{Verb: authz.VerbGet, Name: f.Lease}, nil); err != nil {
		return nil, err
	}
	return k, nil
}

// fenceRevision returns the revision of f's Lease when it is in f's term,
// or a NotLeader Conflict naming its holder. Without fresh it takes the
// version the cache holds, or reads it possibly stale (see readGuard); with
// fresh it reads linearizably. What it reads, it caches.
func (r *Registry) fenceRevision(ctx context.Context, k *Kind, f api.Fence, fresh bool) (int64, error) {
	if v, ok := r.fences.m.Load(f.Lease); ok && !fresh {
		if seen := v.(fenceSeen); f.HeldBy(seen.uid, seen.spec) {
			return seen.rev, nil
		}
	}
	held := func(s *stored) bool {
		spec, err := leaseSpec(s.obj)
		return err == nil && f.HeldBy(s.obj.UID, spec)
	}
	var cur *stored
	var err error
	if fresh {
		cur, err = r.read(ctx, k, "", f.Lease)
	} else {
		cur, err = r.readGuard(ctx, k, "", f.Lease, held)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		r.fences.m.Delete(f.Lease)
		return 0, api.NewNotLeader(f, "")
	case err != nil:
		return 0, err
	}
	spec, _ := leaseSpec(cur.obj)
	r.fences.m.Store(f.Lease, fenceSeen{rev: cur.rev, uid: cur.obj.UID, spec: spec})
	if !held(cur) {
		return 0, api.NewNotLeader(f, spec.HolderIdentity)
	}
	return cur.rev, nil
}

// leaseSpec decodes the spec of a stored Lease.
func leaseSpec(o *api.Object) (api.LeaseSpec, error) {
	var spec api.LeaseSpec
	raw := o.Field(api.FieldSpec)
	if len(raw) == 0 {
		return spec, nil
	}
	err := json.Unmarshal(raw, &spec)
	return spec, err
}

package registry

import (
	"context"
	"errors"
	"strconv"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/store"
)

// Delete marks an object for deletion: it sets deletionTimestamp and adds
// the cascade-deletion finalizer, after which the garbage collector deletes
// the object's dependents and then the object. It returns the marked object
// with gone false. Deleting an object already marked changes nothing. It
// blocks on one store read and one transaction (more when it retries).
//
// With opts.Force every finalizer is dropped and the object is removed at
// once (gone true); its dependents are then collected as orphans. The
// Authorizer allows a forced deletion to admins only.
//
// On a full store, where the deletion mark does not fit, an object without
// finalizers is removed at once (gone true), its dependents collected as
// orphans; one with finalizers gets InsufficientStorage.
//
// Errors: Unauthorized, Forbidden (the caller may not; the default
// namespace), NotFound, Conflict (a precondition does not match),
// InsufficientStorage, ServiceUnavailable, Timeout.
func (r *Registry) Delete(ctx context.Context, kind, ns, name string, opts api.DeleteOptions) (*api.Object, bool, error) {
	k, u, err := r.admit(ctx, kind, authz.Attributes{Verb: authz.VerbDelete, Namespace: ns, Name: name, Force: opts.Force})
	if err != nil {
		return nil, false, err
	}
	it := r.newDelete(kind, ns, name, opts)
	if it.err != nil {
		return nil, false, it.err
	}
	res, _, err := r.run(ctx, u, []*txnItem{it})
	if errors.Is(err, store.ErrNoSpace) && !opts.Force {
		// The store is full and the deletion mark did not fit: remove the
		// object at once if it has no finalizers (a pure deletion, which
		// etcd accepts even then).
		it.direct = true
		res, _, err = r.run(ctx, u, []*txnItem{it})
	}
	if err != nil {
		return nil, false, apiError(err, k.Kind, name)
	}
	return res[0].Object, res[0].Gone, nil
}

func formatRV(rev int64) string { return strconv.FormatInt(rev, 10) }

package registry

import (
	"context"
	"errors"
	"strconv"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// Delete marks an object for deletion: it sets deletionTimestamp and adds
// the cascade-deletion finalizer, after which the garbage collector deletes
// the object's dependents and then the object. It returns the marked object
// with gone false. Deleting an object already marked changes nothing.
//
// With opts.Force every finalizer is dropped and the object is removed at
// once (gone true); its dependents are then collected as orphans. Callers
// must check that the requester may force (the server allows admins only).
//
// Errors: NotFound, Conflict (a precondition does not match), Forbidden
// (the default namespace).
func (r *Registry) Delete(ctx context.Context, kind, ns, name string, opts api.DeleteOptions) (*api.Object, bool, error) {
	k, err := r.Lookup(kind)
	if err != nil {
		return nil, false, err
	}
	if k.Kind == "Namespace" && name == api.DefaultNamespace {
		return nil, false, api.NewForbidden("Namespace", name, "the default namespace cannot be deleted")
	}
	if _, err := parseRV(opts.Preconditions.ResourceVersion); err != nil {
		return nil, false, err
	}
	for attempt := 0; ; attempt++ {
		// The first read may be stale (the write is guarded by its
		// revision); a retry after losing a race reads the latest version.
		cur, err := r.readForWrite(ctx, k, ns, name, attempt, func(s *stored) bool {
			p := opts.Preconditions
			return (p.UID == "" || p.UID == s.obj.UID) && (p.ResourceVersion == "" || p.ResourceVersion == s.obj.ResourceVersion)
		})
		if err != nil {
			return nil, false, err
		}
		if p := opts.Preconditions; p.UID != "" && p.UID != cur.obj.UID {
			return nil, false, api.NewConflict(k.Kind, name, "uid precondition failed: the object has uid "+cur.obj.UID)
		}
		if p := opts.Preconditions; p.ResourceVersion != "" && p.ResourceVersion != cur.obj.ResourceVersion {
			return nil, false, api.NewConflict(k.Kind, name, "resourceVersion precondition failed: the object is at "+cur.obj.ResourceVersion)
		}
		out, gone, err := r.deleteOnce(ctx, k, cur, opts.Force)
		if errors.Is(err, store.ErrPrecondition) && attempt < maxUpdateAttempts {
			continue
		}
		if errors.Is(err, store.ErrPrecondition) {
			return nil, false, api.NewConflict(k.Kind, name, "the object keeps changing; retry")
		}
		return out, gone, err
	}
}

func (r *Registry) deleteOnce(ctx context.Context, k *Kind, cur *stored, force bool) (*api.Object, bool, error) {
	key := r.key(k, cur.obj.Namespace, cur.obj.Name)
	guard := []store.Cond{store.Unchanged(key, cur.rev)}
	if force {
		rev, err := r.store.Txn(ctx, guard, append(removeOps(k, cur.obj), store.Del(key))...)
		if err != nil {
			return nil, false, storeErr(err)
		}
		out := cur.obj.DeepCopy()
		out.ResourceVersion = formatRV(rev)
		return out, true, nil
	}
	if cur.obj.Deleting() {
		// Already marked; confirm cur is not a stale read before saying so.
		if _, err := r.store.Txn(ctx, guard); err != nil {
			return nil, false, storeErr(err)
		}
		return cur.obj, false, nil
	}
	obj := cur.obj.DeepCopy()
	now := r.opts.Now().UTC()
	obj.DeletionTimestamp = &now
	obj.AddFinalizer(api.FinalizerCascadeDeletion)
	out, errs, err := k.prepare(obj, cur.obj, opDelete)
	if err != nil {
		return nil, false, err
	}
	if len(errs) > 0 {
		return nil, false, api.NewInvalid(k.Kind, obj.Name, errs)
	}
	raw, err := r.encode(k, out)
	if err != nil {
		return nil, false, api.NewInternal(err)
	}
	rev, err := r.store.Txn(ctx, guard, append(markOps(k, out), store.Put(key, raw))...)
	if err != nil {
		return nil, false, storeErr(err)
	}
	out.ResourceVersion = formatRV(rev)
	return out, false, nil
}

func formatRV(rev int64) string { return strconv.FormatInt(rev, 10) }

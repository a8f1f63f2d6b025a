package registry

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// maxUpdateAttempts bounds the internal retries of unconditional writes
// (no resourceVersion given) that lose a race.
const maxUpdateAttempts = 16

// Get reads one object. Errors: NotFound.
func (r *Registry) Get(ctx context.Context, kind, ns, name string) (*api.Object, error) {
	k, err := r.Lookup(kind)
	if err != nil {
		return nil, err
	}
	cur, err := r.read(ctx, k, ns, name)
	if err != nil {
		return nil, err
	}
	return cur.obj, nil
}

// Update replaces an object's metadata and desired state; its status is
// kept as stored. With metadata.resourceVersion set the write happens only
// if the object is still at that version (else Conflict); without it the
// write applies to the latest version. Generation grows by one when the
// desired state changes. An update that leaves a deleting object without
// finalizers removes it from the store (watchers see DELETED).
//
// Errors: NotFound, Conflict (stale resourceVersion or uid), Invalid (field
// errors, a finalizer added to a deleting object, an unknown owner),
// BadRequest, Forbidden (a new owner is being deleted).
func (r *Registry) Update(ctx context.Context, in *api.Object) (*api.Object, error) {
	return r.write(ctx, in, opUpdate)
}

// UpdateStatus replaces an object's status and nothing else. With
// metadata.resourceVersion set it is a compare-and-swap like Update.
// Errors: NotFound, Conflict, Invalid, BadRequest.
func (r *Registry) UpdateStatus(ctx context.Context, in *api.Object) (*api.Object, error) {
	return r.write(ctx, in, opStatus)
}

// Patch applies a JSON merge patch (RFC 7386) to the object, or with status
// to its status subresource. A patch that sets metadata.resourceVersion is
// conditional on it; otherwise Patch retries on concurrent changes.
// Errors: as Update, plus BadRequest for a malformed patch.
func (r *Registry) Patch(ctx context.Context, kind, ns, name string, patch []byte, status bool) (*api.Object, error) {
	k, err := r.Lookup(kind)
	if err != nil {
		return nil, err
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(patch, &probe); err != nil || probe == nil {
		return nil, api.NewBadRequest("the patch is not a JSON object: %s", describeDecodeError(errOrNull(err)))
	}
	op := opUpdate
	if status {
		op = opStatus
	}
	for attempt := 0; ; attempt++ {
		cur, err := r.readForWrite(ctx, k, ns, name, attempt, func(*stored) bool { return true })
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(cur.obj)
		if err != nil {
			return nil, api.NewInternal(err)
		}
		merged, err := jsonpatch.MergePatch(raw, patch)
		if err != nil {
			return nil, api.NewBadRequest("cannot apply the merge patch: %v", err)
		}
		next := &api.Object{}
		if err := json.Unmarshal(merged, next); err != nil {
			return nil, api.NewBadRequest("the patched object does not decode: %s", describeDecodeError(err))
		}
		out, err := r.writeOnce(ctx, k, next, cur, op)
		// Retry a race the caller did not ask to detect, and a first attempt
		// that may have read a stale version.
		if errors.Is(err, store.ErrPrecondition) && (next.ResourceVersion == cur.obj.ResourceVersion || attempt == 0) && attempt < maxUpdateAttempts {
			continue
		}
		if errors.Is(err, store.ErrPrecondition) {
			return nil, api.NewConflict(k.Kind, name, "the object has been modified; read it again and retry")
		}
		return out, err
	}
}

func errOrNull(err error) error {
	if err == nil {
		return errors.New("null")
	}
	return err
}

func (r *Registry) write(ctx context.Context, in *api.Object, op operation) (*api.Object, error) {
	k, err := r.Lookup(in.Kind)
	if err != nil {
		return nil, err
	}
	obj := in.DeepCopy()
	if err := checkType(k, obj); err != nil {
		return nil, err
	}
	if _, err := parseRV(obj.ResourceVersion); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		conditional := obj.ResourceVersion != ""
		cur, err := r.readForWrite(ctx, k, obj.Namespace, obj.Name, attempt, func(s *stored) bool {
			return !conditional || s.obj.ResourceVersion == obj.ResourceVersion
		})
		if err != nil {
			return nil, err
		}
		try := obj
		if !conditional {
			try = obj.DeepCopy()
			try.ResourceVersion = cur.obj.ResourceVersion
		}
		out, err := r.writeOnce(ctx, k, try, cur, op)
		if errors.Is(err, store.ErrPrecondition) && attempt < maxUpdateAttempts {
			if !conditional {
				continue
			}
			// The object or one of its guards (a new owner) moved, or the
			// first read was stale: only the object moving is a conflict.
			now, rerr := r.read(ctx, k, obj.Namespace, obj.Name)
			if rerr == nil && now.obj.ResourceVersion == obj.ResourceVersion {
				continue
			}
		}
		if errors.Is(err, store.ErrPrecondition) {
			return nil, api.NewConflict(k.Kind, obj.Name, "the object has been modified; read it again and retry")
		}
		return out, err
	}
}

// writeOnce validates next against the stored cur and commits it with a
// compare-and-swap on cur's revision. It returns store.ErrPrecondition when
// the object (or a guard) changed since cur was read.
func (r *Registry) writeOnce(ctx context.Context, k *Kind, next *api.Object, cur *stored, op operation) (*api.Object, error) {
	old := cur.obj
	if err := checkType(k, next); err != nil {
		return nil, err
	}
	if next.Name != old.Name || (k.Namespaced && next.Namespace != old.Namespace) {
		return nil, api.NewBadRequest("metadata.name and metadata.namespace cannot change")
	}
	if next.ResourceVersion != old.ResourceVersion {
		return nil, store.ErrPrecondition
	}
	if next.UID != "" && next.UID != old.UID {
		return nil, api.NewConflict(k.Kind, next.Name, "uid precondition failed: the object was deleted and created again")
	}
	var obj *api.Object
	var ownerGuards []store.Cond
	var metaErrs field.ErrorList
	if op == opStatus {
		obj = old.DeepCopy()
		obj.SetField(api.FieldStatus, next.Field(api.FieldStatus))
	} else {
		obj = next.DeepCopy()
		obj.UID, obj.CreationTimestamp, obj.DeletionTimestamp = old.UID, old.CreationTimestamp, old.DeletionTimestamp
		obj.Generation, obj.GenerateName = old.Generation, old.GenerateName
		obj.SetField(api.FieldStatus, old.Field(api.FieldStatus))
		metaErrs = append(validateMeta(k, obj), validateFinalizerChange(old, obj)...)
	}
	out, errs, err := k.prepare(obj, old, op)
	if err != nil {
		return nil, err
	}
	if errs = append(metaErrs, errs...); len(errs) > 0 {
		return nil, api.NewInvalid(k.Kind, obj.Name, errs)
	}
	if op != opStatus {
		if ownerGuards, err = r.checkOwners(ctx, k, out, old.OwnerReferences); err != nil {
			return nil, err
		}
	}
	if op == opUpdate && string(desired(out)) != string(desired(old)) {
		out.Generation = old.Generation + 1
	}
	key := r.key(k, out.Namespace, out.Name)
	conds := append([]store.Cond{store.Unchanged(key, cur.rev)}, ownerGuards...)
	if out.Deleting() && len(out.Finalizers) == 0 {
		if _, err := r.store.Txn(ctx, conds, append(removeOps(k, out), store.Del(key))...); err != nil {
			return nil, storeErr(err)
		}
		return out, nil
	}
	if sameStored(out, old) {
		// Nothing to write, but cur may come from a stale read: confirm
		// that it is still the stored version before answering with it.
		if _, err := r.store.Txn(ctx, conds); err != nil {
			return nil, storeErr(err)
		}
		return old, nil
	}
	raw, err := r.encode(k, out)
	if err != nil {
		return nil, api.NewInternal(err)
	}
	rev, err := r.store.Txn(ctx, conds, store.Put(key, raw))
	if err != nil {
		return nil, storeErr(err)
	}
	out.ResourceVersion = formatRV(rev)
	return out, nil
}

// validateFinalizerChange forbids adding finalizers to a deleting object
// and adding the server-managed cascade-deletion finalizer to a live one.
func validateFinalizerChange(old, obj *api.Object) field.ErrorList {
	var errs field.ErrorList
	p := metaPath.Child("finalizers")
	for _, f := range obj.Finalizers {
		if slices.Contains(old.Finalizers, f) {
			continue
		}
		switch {
		case old.Deleting():
			errs = append(errs, field.Forbidden(p, "cannot add finalizer "+f+": the object is being deleted"))
		case f == api.FinalizerCascadeDeletion:
			errs = append(errs, field.Forbidden(p, f+" is managed by the server"))
		}
	}
	return errs
}

// storeErr passes store.ErrPrecondition through (callers retry or report a
// conflict) and turns other store failures into InternalError.
func storeErr(err error) error {
	if errors.Is(err, store.ErrPrecondition) {
		return err
	}
	return api.NewInternal(err)
}

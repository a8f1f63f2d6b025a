package registry

import (
	"context"
	"encoding/json"
	"errors"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/store"
)

// maxUpdateAttempts bounds the internal retries of unconditional writes
// (no resourceVersion given) that lose a race.
const maxUpdateAttempts = 16

// Get reads one object. It blocks on one store read. Errors:
// Unauthorized, Forbidden, NotFound, ServiceUnavailable, Timeout.
func (r *Registry) Get(ctx context.Context, kind, ns, name string) (*api.Object, error) {
	k, _, err := r.admit(ctx, kind, authz.Attributes{Verb: authz.VerbGet, Namespace: ns, Name: name})
	if err != nil {
		return nil, err
	}
	cur, err := r.read(ctx, k, ns, name)
	if err != nil {
		return nil, apiError(err, k.Kind, name)
	}
	return cur.obj, nil
}

// Update replaces an object's metadata and desired state; its status is
// kept as stored. With metadata.resourceVersion set the write happens only
// if the object is still at that version (else Conflict); without it the
// write applies to the latest version. Generation grows by one when the
// desired state changes. An update that leaves a deleting object without
// finalizers removes it from the store (watchers see DELETED). It blocks on
// one store read and one transaction (more when it retries a lost race).
//
// Errors: Unauthorized, Forbidden (the caller may not; a new owner is being
// deleted), NotFound, Conflict (stale resourceVersion or uid), Invalid
// (field errors, a finalizer added to a deleting object, an unknown owner),
// BadRequest, ServiceUnavailable, Timeout.
func (r *Registry) Update(ctx context.Context, in *api.Object) (*api.Object, error) {
	return r.write(ctx, in, OpUpdate)
}

// UpdateStatus replaces an object's status and nothing else. With
// metadata.resourceVersion set it is a compare-and-swap like Update.
// Errors: as Update.
func (r *Registry) UpdateStatus(ctx context.Context, in *api.Object) (*api.Object, error) {
	return r.write(ctx, in, OpUpdateStatus)
}

func (r *Registry) write(ctx context.Context, in *api.Object, op Operation) (*api.Object, error) {
	a := authz.Attributes{Verb: authz.VerbUpdate, Namespace: in.Namespace, Name: in.Name}
	if op == OpUpdateStatus {
		a.Subresource = "status"
	}
	k, u, err := r.admit(ctx, in.Kind, a)
	if err != nil {
		return nil, err
	}
	it := r.newWrite(in, op)
	if it.err != nil {
		return nil, it.err
	}
	res, _, err := r.run(ctx, u, []*txnItem{it})
	if err != nil {
		return nil, apiError(err, k.Kind, in.Name)
	}
	return res[0].Object, nil
}

// Patch applies a JSON merge patch (RFC 7386) to the object, or with status
// to its status subresource. A patch that sets metadata.resourceVersion is
// conditional on it; otherwise Patch retries on concurrent changes.
// Errors: as Update, plus BadRequest for a malformed patch.
func (r *Registry) Patch(ctx context.Context, kind, ns, name string, patch []byte, status bool) (*api.Object, error) {
	a := authz.Attributes{Verb: authz.VerbPatch, Namespace: ns, Name: name}
	op := OpUpdate
	if status {
		a.Subresource, op = "status", OpUpdateStatus
	}
	k, u, err := r.admit(ctx, kind, a)
	if err != nil {
		return nil, err
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(patch, &probe); err != nil || probe == nil {
		return nil, api.NewBadRequest("the patch is not a JSON object: %s", describeDecodeError(errOrNull(err)))
	}
	out, err := r.patch(ctx, r.admission(op, u), k, ns, name, patch)
	return out, apiError(err, k.Kind, name)
}

// patch reads, merges and writes until the write commits, retrying a race
// the caller did not ask to detect and a first attempt that may have read
// a stale version.
func (r *Registry) patch(ctx context.Context, adm *Admission, k *Kind, ns, name string, patch []byte) (*api.Object, error) {
	for attempt := 0; ; attempt++ {
		cur, err := r.readForWrite(ctx, k, ns, name, attempt, func(*stored) bool { return true })
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(cur.obj)
		if err != nil {
			return nil, err
		}
		merged, err := jsonpatch.MergePatch(raw, patch)
		if err != nil {
			return nil, api.NewBadRequest("cannot apply the merge patch: %v", err)
		}
		next := &api.Object{}
		if err := json.Unmarshal(merged, next); err != nil {
			return nil, api.NewBadRequest("the patched object does not decode: %s", describeDecodeError(err))
		}
		p, err := r.planUpdate(ctx, adm, k, next, cur, nil)
		if err == nil {
			var out *api.Object
			if out, err = r.commit(ctx, p); err == nil {
				return out, nil
			}
		}
		retry := next.ResourceVersion == cur.obj.ResourceVersion || attempt == 0
		if !errors.Is(err, store.ErrPrecondition) || !retry || attempt >= maxUpdateAttempts {
			return nil, err // a precondition failure becomes Conflict
		}
	}
}

func errOrNull(err error) error {
	if err == nil {
		return errors.New("null")
	}
	return err
}

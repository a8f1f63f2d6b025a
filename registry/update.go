package registry

import (
	"context"
	"encoding/json"
	"errors"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/identity"
)

// Get reads one object. It blocks on one store read. A Namespace comes
// with status.usage: what it holds as this registry counts it (limits.go).
// Errors: Unauthorized, Forbidden, NotFound, ServiceUnavailable, Timeout.
func (r *Registry) Get(ctx context.Context, kind, ns, name string) (*api.Object, error) {
	k, _, err := r.admit(ctx, kind, authz.Attributes{Verb: authz.VerbGet, Namespace: ns, Name: name})
	if err != nil {
		return nil, err
	}
	cur, err := r.read(ctx, k, ns, name)
	if err == nil && isNamespace(k) {
		err = r.observeUsage(cur.obj)
	}
	if err != nil {
		return nil, apiError(err, k.Kind, name)
	}
	return cur.obj, nil
}

// Update replaces an object's metadata and desired state; its status is
// kept as stored. With metadata.resourceVersion set the write happens only
// if the object is still at that version (else Conflict); without it the
// write applies to the latest version: when another write commits between
// its read and its own, it reads again and retries, after waiting for this
// process's other unconditional writes to the object (see retry.go).
// Generation grows by one when the desired state changes. An update that
// leaves a deleting object without finalizers removes it from the store
// (watchers see DELETED). It blocks on one store read and one transaction
// (more when it retries a lost race), and, without a resourceVersion, on
// the object's other writers in this process.
//
// Errors: Unauthorized, Forbidden (the caller may not; a new owner is being
// deleted), NotFound, Conflict (stale resourceVersion or uid; without a
// resourceVersion, only after 100 lost races in a row), Invalid (field
// errors, a list over its limit, a finalizer added to a deleting object,
// an unknown owner, a write too large for one store transaction),
// BadRequest, ServiceUnavailable, Timeout (also when ctx ends while the
// write waits for its turn or a retry: nothing was written).
//
// With opts DryRun it makes every check and returns the object as it
// would be stored (at its current resourceVersion), writing nothing. At
// most one opts is used.
func (r *Registry) Update(ctx context.Context, in *api.Object, opts ...api.WriteOptions) (*api.Object, error) {
	return r.write(ctx, in, OpUpdate, writeOptions(opts))
}

// UpdateStatus replaces an object's status and nothing else. With
// metadata.resourceVersion set it is a compare-and-swap like Update.
// Errors: as Update.
func (r *Registry) UpdateStatus(ctx context.Context, in *api.Object, opts ...api.WriteOptions) (*api.Object, error) {
	return r.write(ctx, in, OpUpdateStatus, writeOptions(opts))
}

func (r *Registry) write(ctx context.Context, in *api.Object, op Operation, o api.WriteOptions) (*api.Object, error) {
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
	it.manager = o.FieldManager
	res, _, err := r.run(ctx, u, []*txnItem{it}, o.DryRun)
	if err != nil {
		return nil, apiError(err, k.Kind, in.Name)
	}
	return res[0].Object, nil
}

// Patch applies a patch to the object, or with status to its status
// subresource: by opts' PatchType a JSON merge patch (RFC 7386, the
// default) or a JSON patch (RFC 6902). A merge patch that sets
// metadata.resourceVersion is conditional on it (Conflict when the object
// is at another version); otherwise a patch applies to the latest version,
// as an Update without a resourceVersion: it is applied to the object as
// read at each attempt and retried until it commits (see retry.go). A JSON
// patch that does not apply (a failed test operation, a missing path) is
// a BadRequest. With opts DryRun nothing is written (as Update).
// Errors: as Update, plus BadRequest for a malformed patch or one that
// does not apply, UnsupportedMediaType for another patch type.
func (r *Registry) Patch(ctx context.Context, kind, ns, name string, patch []byte, status bool, opts ...api.WriteOptions) (*api.Object, error) {
	o := writeOptions(opts)
	k, u, op, err := r.admitPatch(ctx, kind, ns, name, status)
	if err != nil {
		return nil, err
	}
	rv := ""
	switch o.PatchType {
	case "", api.MergePatch:
		o.PatchType = api.MergePatch
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(patch, &probe); err != nil || probe == nil {
			return nil, api.NewBadRequest("the patch is not a JSON object: %s", describeDecodeError(errOrNull(err)))
		}
		if err := checkPatchFields(k, probe); err != nil {
			return nil, err
		}
		rv = patchPrecondition(probe)
	case api.JSONPatch:
		if _, err := jsonpatch.DecodePatch(patch); err != nil {
			return nil, api.NewBadRequest("the JSON patch does not decode: %v", err)
		}
	case api.ApplyPatch:
		out, _, err := r.apply(ctx, u, k, ns, name, patch, op, o)
		return out, err
	default:
		return nil, api.NewStatus(api.ReasonUnsupportedMedia, "patch type %q is not served", o.PatchType)
	}
	it := newPatch(k, ns, name, patch, rv, op)
	if it.err != nil {
		return nil, it.err
	}
	it.patchType, it.manager = o.PatchType, o.FieldManager
	res, _, err := r.run(ctx, u, []*txnItem{it}, o.DryRun)
	if err != nil {
		return nil, apiError(err, k.Kind, name)
	}
	return res[0].Object, nil
}

// admitPatch admits the caller in ctx to patch kind's object ns/name, or
// with status its status, and returns the kind, the caller and the write's
// operation.
func (r *Registry) admitPatch(ctx context.Context, kind, ns, name string, status bool) (*Kind, identity.User, Operation, error) {
	a := authz.Attributes{Verb: authz.VerbPatch, Namespace: ns, Name: name}
	op := OpUpdate
	if status {
		a.Subresource, op = "status", OpUpdateStatus
	}
	k, u, err := r.admit(ctx, kind, a)
	return k, u, op, err
}

// newPatch is the write of patch to kind k's object ns/name, conditional
// on resourceVersion rv unless rv is "".
func newPatch(k *Kind, ns, name string, patch []byte, rv string, op Operation) *txnItem {
	obj := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: k.Kind}}
	obj.Name, obj.ResourceVersion = name, rv
	if k.Namespaced {
		obj.Namespace = ns
	}
	it := &txnItem{op: op, k: k, obj: obj, patch: patch}
	_, it.err = parseRV(rv)
	return it
}

// patchPrecondition is the metadata.resourceVersion a merge patch (decoded
// into probe) sets, or "" when it sets none (or null).
func patchPrecondition(probe map[string]json.RawMessage) string {
	var meta map[string]json.RawMessage
	if json.Unmarshal(probe["metadata"], &meta) != nil {
		return ""
	}
	var rv string
	if json.Unmarshal(meta["resourceVersion"], &rv) != nil {
		return ""
	}
	return rv
}

// applyPatch applies patch, of type pt, to cur, the object as stored.
func applyPatch(cur *api.Object, patch []byte, pt api.PatchType) (*api.Object, error) {
	raw, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	var merged []byte
	if pt == api.JSONPatch {
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, api.NewBadRequest("the JSON patch does not decode: %v", err)
		}
		if merged, err = p.Apply(raw); err != nil {
			return nil, api.NewBadRequest("cannot apply the JSON patch: %v", err)
		}
	} else if merged, err = jsonpatch.MergePatch(raw, patch); err != nil {
		return nil, api.NewBadRequest("cannot apply the merge patch: %v", err)
	}
	next := &api.Object{}
	if err := json.Unmarshal(merged, next); err != nil {
		return nil, api.NewBadRequest("the patched object does not decode: %s", describeDecodeError(err))
	}
	return next, nil
}

// writeOptions is the options of a verb's variadic opts: the first, or
// the zero value.
func writeOptions(opts []api.WriteOptions) api.WriteOptions {
	if len(opts) == 0 {
		return api.WriteOptions{}
	}
	return opts[0]
}

func errOrNull(err error) error {
	if err == nil {
		return errors.New("null")
	}
	return err
}

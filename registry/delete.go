package registry

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/store"
)

// Delete marks an object for deletion: it sets deletionTimestamp and adds
// the finalizer of opts.PropagationPolicy. With Foreground (the default)
// that is cascade-deletion: the garbage collector deletes the object's
// dependents and then the object. With Orphan it is the orphan finalizer:
// the collector removes the dependents' references to the object, then
// the object goes. With Background there is none: an object without
// finalizers is removed at once (gone true) and the collector deletes its
// dependents as orphans. It returns the marked object with gone false, or
// the removed one with gone true. Deleting an object already marked
// changes nothing. With opts.DryRun nothing is written: the result is the
// object as the deletion would leave it. It blocks on one store read and
// one transaction (more when it retries).
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
// BadRequest (an unknown propagation policy; Orphan for a Namespace),
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
	res, _, err := r.run(ctx, u, []*txnItem{it}, opts.DryRun)
	if errors.Is(err, store.ErrNoSpace) && !opts.Force && !opts.DryRun {
		// The store is full and the deletion mark did not fit: remove the
		// object at once if it has no finalizers (a pure deletion, which
		// etcd accepts even then).
		it.direct = true
		res, _, err = r.run(ctx, u, []*txnItem{it}, false)
	}
	if err != nil {
		return nil, false, apiError(err, k.Kind, name)
	}
	return res[0].Object, res[0].Gone, nil
}

func formatRV(rev int64) string { return strconv.FormatInt(rev, 10) }

// checkPropagation refuses a propagation policy that is not one of
// api's, and Orphan for a Namespace, whose objects cannot outlive it.
func checkPropagation(k *Kind, policy string) error {
	switch policy {
	case "", api.PropagationForeground, api.PropagationBackground:
		return nil
	case api.PropagationOrphan:
		if isNamespace(k) {
			return badPropagation(policy, "the objects of a namespace cannot outlive it: use Foreground or Background")
		}
		return nil
	}
	return badPropagation(policy, "must be Foreground, Background or Orphan")
}

func badPropagation(policy, why string) error {
	msg := fmt.Sprintf("propagationPolicy %q: %s", policy, why)
	st := api.NewBadRequest("%s", msg)
	st.Details = &api.StatusDetails{Causes: []api.StatusCause{{Field: "propagationPolicy", Type: "FieldValueNotSupported", Message: msg}}}
	return st
}

// DeleteCollection deletes every object of a kind in ns (every namespace
// when ns is "") that listOpts selects (labels, fields), each as Delete
// does with opts, and returns them as the deletions left them (removed or
// marked). The caller needs list on the collection and delete on each
// object. An object already gone when its turn comes is skipped; any other
// failure stops the deletion there and is returned with the objects
// deleted so far. It blocks on the list's store reads and on one deletion
// per object.
//
// Errors: those of List and of Delete.
func (r *Registry) DeleteCollection(ctx context.Context, kind, ns string, listOpts api.ListOptions, opts api.DeleteOptions) (*api.List, error) {
	list, err := r.List(ctx, kind, ns, api.ListOptions{LabelSelector: listOpts.LabelSelector, FieldSelector: listOpts.FieldSelector})
	if err != nil {
		return nil, err
	}
	out := &api.List{TypeMeta: list.TypeMeta, ListMeta: api.ListMeta{ResourceVersion: list.ResourceVersion}, Items: []*api.Object{}}
	for _, o := range list.Items {
		del := opts
		ownUID := del.Preconditions.UID == ""
		if ownUID {
			del.Preconditions.UID = o.UID // never another incarnation of that name
		}
		obj, _, err := r.Delete(ctx, kind, o.Namespace, o.Name, del)
		switch {
		case errors.Is(err, api.ErrNotFound), ownUID && errors.Is(err, api.ErrConflict):
			continue // gone since the list (or replaced: not the one listed)
		case err != nil:
			return out, err
		}
		out.Items = append(out.Items, obj)
	}
	return out, nil
}

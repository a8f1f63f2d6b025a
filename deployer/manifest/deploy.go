package manifest

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer"
	"cairn.dev/cairn/deployer/kube"
	"cairn.dev/cairn/deployer/kube/config"
	"cairn.dev/cairn/trace"
)

// deploy runs one pass of the item's run: apply and prune once, then
// check readiness and read the exports. An error is the cluster's
// (Reconcile retries one that says the cluster did not answer).
func (d *Deployer) deploy(ctx context.Context, item *deployer.Item, cl *kube.Cluster, m config.Manifest, objs []config.Object, st *run) (deployer.Outcome, error) {
	ps := providerStatus(item)
	var g kube.Getter = cl
	if !st.applied {
		applied, fresh, out, err := d.applyAll(ctx, item, cl, m, objs)
		if out != nil || err != nil {
			return deref(out), err
		}
		for _, p := range Prunable(ps.ManagedResources, applied) {
			if err := deleteObject(ctx, cl, p); err != nil {
				if kube.Unreachable(err) {
					return deployer.Outcome{}, err
				}
				return deployer.Failed(api.ReasonApplyFailed, "prune %s (no longer rendered): %v", p.Ref(), err), nil
			}
			trace.Action(ctx, "pruned %s: no longer rendered", p.Ref())
		}
		ps.ManagedResources = applied
		st.applied = true
		g = fresh // what the applies answered: the first check reads no object again
	}
	item.Status.LastError = nil // the cluster answers
	refs := make([]kube.ObjectRef, len(ps.ManagedResources))
	for i, r := range ps.ManagedResources {
		refs[i] = r.Ref()
	}
	rep, err := kube.CheckAll(ctx, g, refs, m.Readiness)
	if err != nil {
		return deployer.Outcome{}, err
	}
	MarkReady(ps.ManagedResources, rep)
	for i := range ps.ManagedResources { // a custom check quotes the value it read
		ps.ManagedResources[i].Message = st.red.String(ps.ManagedResources[i].Message)
	}
	setProviderStatus(item, &ps)
	if bad, ok := rep.NotReady(); ok {
		if d.expired(item) {
			return deployer.Failed(api.ReasonNotReady, "%s is not ready within the progressing timeout: %s", bad.Ref, bad.Message), nil
		}
		trace.Check(ctx, "not ready (%s): %s: %s", ps.Ready, bad.Ref, st.red.String(bad.Message))
		return deployer.InProgress(d.opts.Poll), nil
	}
	trace.Check(ctx, "all %d objects ready", len(ps.ManagedResources))
	exports, err := kube.Exports(ctx, g, nil, m.Exports)
	if kube.Unreachable(err) {
		return deployer.Outcome{}, err
	}
	if err != nil {
		if d.expired(item) {
			return deployer.Failed(api.ReasonExportFailed, "%v", err), nil
		}
		trace.Check(ctx, "exports not readable yet: %v", err)
		return deployer.InProgress(d.opts.Poll), nil
	}
	return deployer.Succeeded(exports), nil
}

// applyAll applies objs in order and returns what it manages now and a
// Getter answering with the applied objects first, or a Failed (or
// waiting) outcome naming the entry at fault.
func (d *Deployer) applyAll(ctx context.Context, item *deployer.Item, cl *kube.Cluster, m config.Manifest, objs []config.Object) ([]kube.ManagedResource, kube.Getter, *deployer.Outcome, error) {
	fm := FieldManager(item.Namespace, item.Name)
	out := make([]kube.ManagedResource, 0, len(objs))
	fresh := appliedGetter{m: map[kube.ObjectRef]*unstructured.Unstructured{}, g: cl}
	for i, o := range objs {
		at := fmt.Sprintf("config.manifests[%d]", i)
		mr, obj, err := apply(ctx, cl, fm, o, m.Namespace)
		switch {
		case err == nil:
			trace.Action(ctx, "applied %s (%s)", mr.Ref(), mr.Policy)
			out = append(out, mr)
			fresh.m[mr.Ref()] = obj
			continue
		case kube.Unreachable(err):
			return nil, nil, nil, err
		case meta.IsNoMatchError(err) && !d.expired(item):
			// A CRD applied before it may not be established yet.
			trace.Check(ctx, "%s: the cluster does not know kind %s %s yet: waiting", at, o.Ref.APIVersion, o.Ref.Kind)
			f := deployer.InProgress(d.opts.Poll)
			return nil, nil, &f, nil
		case apierrors.IsConflict(err):
			f := deployer.Failed(api.ReasonFieldConflict, "%s %s: another manager owns fields this item sets: %v", at, o.Ref, err)
			return nil, nil, &f, nil
		}
		f := deployer.Failed(api.ReasonApplyFailed, "%s %s: %v", at, o.Ref, err)
		return nil, nil, &f, nil
	}
	return out, fresh, nil, nil
}

// appliedGetter answers with the objects as their apply returned them,
// and reads the others through g.
type appliedGetter struct {
	m map[kube.ObjectRef]*unstructured.Unstructured
	g kube.Getter
}

// Get returns the applied object ref names, or reads it.
func (a appliedGetter) Get(ctx context.Context, ref kube.ObjectRef) (*unstructured.Unstructured, error) {
	if o, ok := a.m[ref]; ok {
		return o, nil
	}
	return a.g.Get(ctx, ref)
}

// apply puts one object into the cluster as its policy says, in
// namespace def when it is namespaced and names none.
func apply(ctx context.Context, cl *kube.Cluster, fm string, o config.Object, def string) (kube.ManagedResource, *unstructured.Unstructured, error) {
	mr := kube.ManagedResource{APIVersion: o.Ref.APIVersion, Kind: o.Ref.Kind, Name: o.Ref.Name, Policy: o.Policy}
	mapping, err := cl.Mapping(o.Ref.APIVersion, o.Ref.Kind)
	if err != nil {
		return mr, nil, err
	}
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(o.Object)}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		mr.Namespace = o.Ref.Namespace
		if mr.Namespace == "" {
			mr.Namespace = def
		}
		if mr.Namespace == "" {
			return mr, nil, fmt.Errorf("%s is namespaced: set its metadata.namespace or config.namespace", o.Ref)
		}
	}
	u.SetNamespace(mr.Namespace)
	ri, _, err := cl.Resource(mr.Ref())
	if err != nil {
		return mr, nil, err
	}
	var res *unstructured.Unstructured
	if o.Policy == config.PolicyIgnore {
		res, err = ri.Get(ctx, mr.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			res, err = ri.Create(ctx, u, metav1.CreateOptions{FieldManager: fm})
		}
	} else {
		res, err = ri.Apply(ctx, mr.Name, u, metav1.ApplyOptions{FieldManager: fm})
	}
	if err != nil {
		return mr, nil, err
	}
	mr.UID = string(res.GetUID())
	return mr, res, nil
}

// deleteObject deletes the object r records (only the very one: a
// precondition on its uid); one already gone is not an error.
func deleteObject(ctx context.Context, cl *kube.Cluster, r kube.ManagedResource) error {
	ri, _, err := cl.Resource(r.Ref())
	if meta.IsNoMatchError(err) {
		return nil // its kind is gone, and it with it
	}
	if err != nil {
		return err
	}
	opts := metav1.DeleteOptions{}
	if r.UID != "" {
		uid := typesUID(r.UID)
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err = ri.Delete(ctx, r.Name, opts)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) { // gone, or another object by that name now
		return nil
	}
	return err
}

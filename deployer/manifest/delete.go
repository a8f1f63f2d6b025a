package manifest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer"
	"cairn.dev/cairn/deployer/kube"
	"cairn.dev/cairn/trace"
)

func typesUID(s string) types.UID { return types.UID(s) }

// wayOut is appended to the error of an uninstall that cannot reach the
// cluster.
var wayOut = fmt.Sprintf("; if the cluster is gone for good, annotate the deploy item %s: \"true\" to delete it without uninstalling",
	api.AnnotationDeleteWithoutUninstall)

// Delete deletes the item's objects of policy manage one at a time, in
// DeletionOrder, waiting until each is gone; objects of other policies
// are let go. It reports Done once none is left.
func (d *Deployer) Delete(ctx context.Context, item *deployer.Item) (deployer.Outcome, error) {
	ps := providerStatus(item)
	if len(ps.ManagedResources) == 0 {
		trace.Check(ctx, "no managed objects left")
		return deployer.Succeeded(nil), nil
	}
	cl, failed, err := d.cluster(ctx, item, wayOut)
	if failed != nil || err != nil {
		return deref(failed), err
	}
	st := d.state(item)
	out, err := d.deleteNext(ctx, item, cl, ps)
	if kube.Unreachable(err) {
		return d.unreachableDeletion(ctx, item, st, err), nil
	}
	if err == nil {
		st.since, st.attempts = time.Time{}, 0
	}
	return out, err
}

// deleteNext walks the objects in deletion order: it drops those gone (or
// not deleted by policy), deletes the first one still there and waits
// for it.
func (d *Deployer) deleteNext(ctx context.Context, item *deployer.Item, cl *kube.Cluster, ps kube.ProviderStatus) (deployer.Outcome, error) {
	defer func() { setProviderStatus(item, &ps) }()
	for _, r := range DeletionOrder(ps.ManagedResources) {
		if !r.Policy.Deletes() {
			trace.Check(ctx, "%s has policy %s: left in the cluster", r.Ref(), r.Policy)
			ps.ManagedResources = without(ps.ManagedResources, r)
			continue
		}
		obj, err := cl.Get(ctx, r.Ref())
		if apierrors.IsNotFound(err) || err == nil && r.UID != "" && string(obj.GetUID()) != r.UID {
			trace.Action(ctx, "%s is gone", r.Ref())
			ps.ManagedResources = without(ps.ManagedResources, r)
			continue
		}
		if err != nil {
			return deployer.Outcome{}, err
		}
		if obj.GetDeletionTimestamp() == nil {
			if err := deleteObject(ctx, cl, r); err != nil {
				return deployer.Outcome{}, err
			}
			trace.Action(ctx, "deleting %s", r.Ref())
		}
		why := "it is being deleted"
		if f := obj.GetFinalizers(); len(f) > 0 {
			why += " (finalizers: " + strings.Join(f, ", ") + ")"
		}
		mark(ps.ManagedResources, r, why)
		trace.Check(ctx, "%s blocks the deletion: %s", r.Ref(), why)
		return deployer.InProgress(d.opts.Poll), nil
	}
	trace.Check(ctx, "every managed object is gone")
	return deployer.Succeeded(nil), nil
}

// unreachableDeletion retries a deletion whose cluster does not answer,
// for the item's progressing timeout from the first silence; then it
// fails naming the way out.
func (d *Deployer) unreachableDeletion(ctx context.Context, item *deployer.Item, st *run, err error) deployer.Outcome {
	now := d.opts.Now()
	if st.since.IsZero() {
		st.since = now
	}
	if dl, ok := Deadline(st.since, specTimeout(item), d.opts.ProgressingTimeout); ok && !now.Before(dl) {
		return deployer.Failed(api.ReasonClusterUnreachable, "the cluster of Target %s did not answer the uninstall: %v%s", item.Spec.Target, err, wayOut)
	}
	st.attempts++
	wait := Backoff(st.attempts)
	msg := fmt.Sprintf("the cluster of Target %s does not answer the uninstall (%v): retrying with backoff%s", item.Spec.Target, err, wayOut)
	trace.Check(ctx, "%s; next attempt in %s", msg, wait)
	item.Status.LastError = &api.LastError{Reason: api.ReasonClusterUnreachable, Message: msg}
	return deployer.InProgress(wait)
}

// without returns rs without the object r names.
func without(rs []kube.ManagedResource, r kube.ManagedResource) []kube.ManagedResource {
	return slices.DeleteFunc(slices.Clone(rs), func(x kube.ManagedResource) bool { return sameObject(x.Ref(), r.Ref()) })
}

// mark sets the message of the object r names in rs.
func mark(rs []kube.ManagedResource, r kube.ManagedResource, msg string) {
	for i := range rs {
		if sameObject(rs[i].Ref(), r.Ref()) {
			rs[i].Message = msg
		}
	}
}

// specTimeout is the item's spec.timeout, if any.
func specTimeout(item *deployer.Item) *time.Duration {
	if item.Spec.Timeout == nil {
		return nil
	}
	return &item.Spec.Timeout.Duration
}

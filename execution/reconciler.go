// Package execution is the execution controller: it keeps the DeployItems
// of every Execution in line with its spec and collects their phases and
// exports, exactly as the seed landscaper-execution-controller.md says.
// The decisions are plain functions (plan.go); the Reconciler reads the
// shared informers, calls them and writes through the client.
package execution

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/trace"
)

// Options configures the execution controller. The zero value is usable.
type Options struct {
	// Workers is the number of executions reconciled concurrently;
	// default 32 (the work is mostly waiting for writes to commit, which
	// etcd batches).
	Workers int
	// Now is the clock of the reconcile-time annotation; default time.Now.
	Now func() time.Time
}

// Reconciler reconciles Executions. It is level-based: each Reconcile
// re-reads the execution and its deploy items from the shared informers
// (falling back to the API for items the cache has not seen yet) and acts
// on what it finds.
type Reconciler struct {
	c     client.Interface
	opts  Options
	log   *slog.Logger
	execs *informer.Informer
	items *informer.Informer

	// written holds, per execution key, the resourceVersion of this
	// controller's last write, so that a reconcile on a cache that has not
	// seen it yet waits for the watch event instead of acting twice.
	written controller.Written
}

// newReconciler builds the reconciler of a term: it reads the term's
// informers and writes through its client.
func newReconciler(t *manager.Term, opts Options) *Reconciler {
	if opts.Workers <= 0 {
		opts.Workers = 32
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Reconciler{c: t.Client, opts: opts, log: t.Logger,
		execs: t.Informers.For(api.KindExecution), items: t.Informers.For(api.KindDeployItem)}
}

// Reconcile runs the seed's reconcile algorithm for the execution key
// ("ns/name").
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name := api.SplitKey(key)
	obj, ok := r.execs.Get(ns, name)
	if !ok {
		r.written.Forget(key)
		return controller.Result{}, nil
	}
	if r.written.Stale(key, obj.ResourceVersion) {
		trace.Exit(ctx, "cache behind this controller's last write: waiting for its watch event")
		return controller.Result{}, nil
	}
	e, err := controller.Decode[*api.Execution](obj)
	if err != nil {
		return controller.Result{}, controller.Terminal(fmt.Errorf("execution: %w", err))
	}
	s := Begin(e)
	trace.Check(ctx, "operation: %s (%s)", s.Op, s.Reason)
	if s.Op == OpIgnore {
		trace.Exit(ctx, "ignored: %s", s.Reason)
		return controller.Result{}, nil
	}
	if s.AddFinalizer {
		e.AddFinalizer(api.FinalizerExecution)
		if err := r.update(ctx, key, e); err != nil {
			return controller.Result{}, err
		}
		trace.Action(ctx, "added finalizer %s", api.FinalizerExecution)
	}
	switch s.Op {
	case OpDelete:
		trace.Subflow(ctx, "delete operation")
		err = r.deleteOp(ctx, key, e)
	case OpRecheck:
		trace.Subflow(ctx, "re-check of deploy items")
		err = r.recheck(ctx, key, e)
	default:
		trace.Subflow(ctx, "reconcile operation")
		err = r.reconcileOp(ctx, key, e, s.Force)
	}
	return controller.Result{}, r.refused(ctx, key, e, err)
}

// refused records in e's lastError that the API refused a write this
// reconcile needed (api.WriteRefused: a namespace at its object limit, an
// object too large, a full store), with the API's reason and message, and
// returns err: the reconcile is retried with backoff, as what fixes it
// sends the execution no event. Other errors are returned as they are.
func (r *Reconciler) refused(ctx context.Context, key string, e *api.Execution, err error) error {
	if !api.WriteRefused(err) {
		return err
	}
	msg := fmt.Sprintf("the API refused a write (%s): %v", api.ReasonOf(err), err)
	st := e.Status
	st.LastError = &api.LastError{Reason: api.ReasonWriteRefused, Message: msg, Time: r.opts.Now().UTC()}
	if werr := r.writeStatus(ctx, key, e, st); werr != nil {
		r.log.Warn("execution: cannot record a refused write", "key", key, "err", werr)
	}
	trace.Exit(ctx, "%s: %s (retried with backoff)", api.ReasonWriteRefused, msg)
	return err
}

// reconcileOp is the seed's reconcile operation.
func (r *Reconciler) reconcileOp(ctx context.Context, key string, e *api.Execution, force bool) error {
	items, objs, err := r.managed(ctx, e)
	if err != nil {
		return err
	}
	p := PlanReconcile(e.Spec.DeployItems, items, e.Status.DeployItems, e.Generation, force)
	for _, o := range p.Orphans {
		if o.Deleting {
			trace.Check(ctx, "orphaned deploy item %s is being deleted", o.Ref)
			continue
		}
		if err := r.deleteItem(ctx, e, objs[o.Name]); err != nil {
			return err
		}
		trace.Action(ctx, "deleted orphaned deploy item %s (%s is no longer in the spec)", o.Ref, o.Name)
	}
	for _, pair := range p.Pairs {
		trace.Check(ctx, "deploy item %s: class %s (%s)", pair.Template.Name, pair.Class, pair.Why)
	}
	st := e.Status
	st.ObservedGeneration, st.Phase, st.LastError = e.Generation, p.Phase, nil
	st.DeployItems = keepRefs(e.Spec.DeployItems, st.DeployItems)
	switch p.Phase {
	case api.DeploySucceeded:
		ref, err := r.collectExports(ctx, e, items)
		if err != nil {
			return err
		}
		st.ExportRef = ref
		trace.Action(ctx, "collected the exports of every deploy item into DataObject %s", ref)
	case api.DeployFailed:
		st.ExportRef = ""
		st.LastError = &api.LastError{Reason: api.ReasonDeployItemFailed, Message: p.Reason, Time: r.opts.Now().UTC()}
	default:
		st.ExportRef = ""
		for _, name := range p.Update {
			t := template(e.Spec.DeployItems, name)
			gen, ref, err := r.apply(ctx, e, t, objs[name])
			if err != nil {
				return err
			}
			setRef(&st.DeployItems, api.DeployItemRef{Name: name, Ref: ref, ExecutionGeneration: e.Generation, DeployItemGeneration: gen})
			verb := "updated"
			if objs[name] == nil {
				verb = "created"
			}
			trace.Action(ctx, "%s deploy item %s (%s), generation %d, for its deployer to pick up", verb, name, ref, gen)
		}
		if force {
			// Every item not updated now stays class 2 until its turn.
			for i := range st.DeployItems {
				if !contains(p.Update, st.DeployItems[i].Name) {
					st.DeployItems[i].ExecutionGeneration = 0
				}
			}
		}
	}
	st.Ready = ready(e.Spec.DeployItems, items, p.Update)
	if err := r.writeStatus(ctx, key, e, st); err != nil {
		return err
	}
	trace.Exit(ctx, "phase %s: %s", p.Phase, p.Reason)
	return r.dropOperation(ctx, key, e)
}

// recheck is the seed's re-check of deploy items.
func (r *Reconciler) recheck(ctx context.Context, key string, e *api.Execution) error {
	items, _, err := r.managed(ctx, e)
	if err != nil {
		return err
	}
	res := Recheck(e.Spec.DeployItems, items, e.Status.DeployItems, e.Generation, e.Status.Phase)
	trace.Check(ctx, "%s", res.Reason)
	if res.Reconcile {
		trace.Subflow(ctx, "reconcile operation (the re-check found a change)")
		return r.reconcileOp(ctx, key, e, false)
	}
	if res.Phase == e.Status.Phase {
		trace.Exit(ctx, "phase %s unchanged", res.Phase)
		return nil
	}
	st := e.Status
	st.Phase, st.LastError, st.ExportRef = res.Phase, nil, ""
	if res.CollectExports {
		ref, err := r.collectExports(ctx, e, items)
		if err != nil {
			return err
		}
		st.ExportRef = ref
		trace.Action(ctx, "collected the exports of every deploy item into DataObject %s", ref)
	}
	if res.Phase == api.DeployFailed {
		st.LastError = &api.LastError{Reason: api.ReasonDeployItemFailed, Message: failedItems(items), Time: r.opts.Now().UTC()}
	}
	st.Ready = ready(e.Spec.DeployItems, items, nil)
	if err := r.writeStatus(ctx, key, e, st); err != nil {
		return err
	}
	trace.Exit(ctx, "phase %s (combined phase of the deploy items)", res.Phase)
	return nil
}

// deleteOp is the seed's delete operation.
func (r *Reconciler) deleteOp(ctx context.Context, key string, e *api.Execution) error {
	items, objs, err := r.managed(ctx, e)
	if err != nil {
		return err
	}
	p := PlanDelete(e.Spec.DeployItems, items)
	if p.Gone {
		if e.RemoveFinalizer(api.FinalizerExecution) {
			if err := r.update(ctx, key, e); err != nil {
				return err
			}
			trace.Action(ctx, "removed finalizer %s", api.FinalizerExecution)
		}
		trace.Exit(ctx, "all deploy items are gone")
		return nil
	}
	for _, it := range p.Delete {
		if err := r.deleteItem(ctx, e, objs[it.Name]); err != nil {
			return err
		}
		trace.Action(ctx, "deleted deploy item %s (%s): nothing left depends on it", it.Name, it.Ref)
	}
	if e.Annotations[api.AnnotationDeleteWithoutUninstall] == "true" {
		for _, name := range sortedNames(items) {
			if it := items[name]; it.Deleting {
				if err := r.markWithoutUninstall(ctx, objs[name]); err != nil {
					return err
				}
			}
		}
	}
	for _, w := range p.Waiting {
		trace.Check(ctx, "deploy item %s", w)
	}
	st := e.Status
	st.Phase, st.LastError, st.ExportRef = p.Phase, nil, ""
	if p.Phase == api.DeployFailed {
		st.LastError = &api.LastError{Reason: api.ReasonDeletionFailed, Message: p.Reason, Time: r.opts.Now().UTC()}
		trace.Exit(ctx, "Failed: %s", p.Reason)
	} else {
		trace.Exit(ctx, "Deleting: %d deploy items remain", len(items))
	}
	return r.writeStatus(ctx, key, e, st)
}

// managed reads the deploy items e controls, by spec name: from the cache,
// and from the API for items e's status names that the cache lacks (it
// may not have seen their creation yet).
func (r *Reconciler) managed(ctx context.Context, e *api.Execution) (map[string]*Item, map[string]*api.Object, error) {
	objs := map[string]*api.Object{}
	cached, err := r.items.ByIndex(informer.OwnerUIDIndex, e.UID)
	if err != nil {
		return nil, nil, fmt.Errorf("execution: %w", err)
	}
	for _, o := range cached {
		if ref := o.ControllerRef(); ref == nil || ref.UID != e.UID {
			continue
		}
		if n := o.Labels[api.LabelDeployItemName]; n != "" {
			objs[n] = o
		}
	}
	for _, ref := range e.Status.DeployItems {
		if _, ok := objs[ref.Name]; ok || ref.Ref == "" {
			continue
		}
		o, err := r.c.Get(ctx, api.KindDeployItem, e.Namespace, ref.Ref)
		switch {
		case errors.Is(err, api.ErrNotFound):
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("execution: get deploy item %s: %w", ref.Ref, err)
		}
		if cr := o.ControllerRef(); cr != nil && cr.UID == e.UID {
			objs[ref.Name] = o
		}
	}
	items := make(map[string]*Item, len(objs))
	for n, o := range objs {
		it, err := itemOf(n, o)
		if err != nil {
			return nil, nil, err
		}
		items[n] = it
	}
	return items, objs, nil
}

// itemOf is what the decisions need of a deploy item: its metadata and its
// status (the spec, which may be large, is not decoded).
func itemOf(name string, o *api.Object) (*Item, error) {
	var st api.DeployItemStatus
	if raw := o.Field(api.FieldStatus); len(raw) > 0 {
		if err := json.Unmarshal(raw, &st); err != nil {
			return nil, fmt.Errorf("execution: decode the status of deploy item %s: %w", o.Name, err)
		}
	}
	op := o.Annotations[api.AnnotationOperation]
	return &Item{
		Name: name, Ref: o.Name, Generation: o.Generation, ObservedGeneration: st.ObservedGeneration,
		Phase: st.Phase, Deleting: o.Deleting(), LastError: st.LastError, ExportRef: st.ExportRef,
		Pending: op == api.OperationReconcile || op == api.OperationForceReconcile,
	}, nil
}

// keepRefs keeps the recorded generations of the items still in spec.
func keepRefs(spec []api.DeployItemTemplate, refs []api.DeployItemRef) []api.DeployItemRef {
	var out []api.DeployItemRef
	for _, ref := range refs {
		if template(spec, ref.Name).Name != "" {
			out = append(out, ref)
		}
	}
	return out
}

func setRef(refs *[]api.DeployItemRef, ref api.DeployItemRef) {
	for i := range *refs {
		if (*refs)[i].Name == ref.Name {
			(*refs)[i] = ref
			return
		}
	}
	*refs = append(*refs, ref)
}

func template(spec []api.DeployItemTemplate, name string) api.DeployItemTemplate {
	for _, t := range spec {
		if t.Name == name {
			return t
		}
	}
	return api.DeployItemTemplate{}
}

func contains(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

// ready counts the items that succeeded for their current generation (and
// are not being updated now), as "2/3".
func ready(spec []api.DeployItemTemplate, items map[string]*Item, updating []string) string {
	n := 0
	for _, t := range spec {
		if it := items[t.Name]; it != nil && it.Done() && it.Phase == api.DeploySucceeded && !contains(updating, t.Name) {
			n++
		}
	}
	return fmt.Sprintf("%d/%d", n, len(spec))
}

func failedItems(items map[string]*Item) string {
	var out string
	for _, n := range sortedNames(items) {
		if it := items[n]; it.Phase == api.DeployFailed {
			if out != "" {
				out += "; "
			}
			out += "deploy item " + failure(it)
		}
	}
	return out
}

// ItemName is the object name of deploy item item of execution exec:
// "<exec>-<item>", shortened with a hash when longer than a DNS label.
func ItemName(exec, item string) string { return boundedName(exec+"-"+item, exec+"/"+item) }

// ExportName is the name of the DataObject holding execution exec's
// exports.
func ExportName(exec string) string { return boundedName(exec+"-exports", exec+"/exports") }

func boundedName(name, seed string) string {
	const max = 63
	if len(name) <= max {
		return name
	}
	sum := sha256.Sum256([]byte(seed))
	return name[:max-9] + "-" + hex.EncodeToString(sum[:4])
}

package deployer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/conflict"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/trace"
)

// Options configures a deployer controller.
type Options struct {
	// Type is the deploy item type handled. Required.
	Type string
	// Deployer does the work. Required.
	Deployer Deployer
	// NoUninstall declares that the type has nothing to uninstall: its
	// items get no finalizer (Deployer.Delete is never called), which
	// saves the writes of adding and removing it.
	NoUninstall bool
	// Stateless declares that the Deployer's Reconcile keeps no state
	// outside the item (it may run before the pickup is written, and again
	// after a restart without harm): an item whose work ends at once is
	// then picked up and finished in one status write.
	Stateless bool
	// Workers is the number of items handled concurrently; default 32
	// (the work is mostly waiting for writes to commit, which etcd
	// batches).
	Workers int
	// Now is the clock of lastReconcileTime and lastError; default
	// time.Now.
	Now func() time.Time
}

// Controller runs one Deployer on the deploy items of its type.
type Controller struct {
	c     client.Interface
	opts  Options
	d     Deployer
	log   *slog.Logger
	items *informer.Informer
	// ctrl is the controller of the term, set by Setup before it runs.
	ctrl *controller.Controller

	written controller.Written
}

// TypeOf reads a deploy item's spec.type from its generic form.
func TypeOf(obj *api.Object) string {
	var spec struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(obj.Field(api.FieldSpec), &spec)
	return spec.Type
}

// Reconcile handles the deploy item key ("ns/name") as the contract says.
func (k *Controller) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name := api.SplitKey(key)
	obj, ok := k.items.Get(ns, name)
	if !ok {
		k.written.Forget(key)
		return controller.Result{}, nil
	}
	if TypeOf(obj) != k.opts.Type {
		return controller.Result{}, nil
	}
	if k.written.Stale(key, obj.ResourceVersion) {
		trace.Exit(ctx, "cache behind this deployer's last write: waiting for its watch event")
		return controller.Result{}, nil
	}
	d, err := controller.Decode[*api.DeployItem](obj)
	if err != nil {
		return controller.Result{}, controller.Terminal(fmt.Errorf("deployer: %w", err))
	}
	item := &Item{DeployItem: d, Notify: func() { k.ctrl.Enqueue(key) }, c: k.c}
	res, err := k.dispatch(ctx, key, item)
	return res, k.refused(ctx, key, item.DeployItem, err)
}

// dispatch runs the step of the contract the item is at: deletion, abort,
// pickup, or the work of its run.
func (k *Controller) dispatch(ctx context.Context, key string, item *Item) (controller.Result, error) {
	d := item.DeployItem
	op := d.Annotations[api.AnnotationOperation]
	switch {
	case d.Deleting():
		trace.Subflow(ctx, "deletion (deployer %s)", k.opts.Type)
		return k.deletion(ctx, key, item)
	case op == api.OperationAbort:
		trace.Subflow(ctx, "abort (deployer %s)", k.opts.Type)
		return controller.Result{}, k.abort(ctx, key, item)
	case d.Status.ObservedGeneration != d.Generation || op == api.OperationReconcile || op == api.OperationForceReconcile:
		trace.Check(ctx, "pick up: generation %d, observed %d, operation %q", d.Generation, d.Status.ObservedGeneration, op)
		return k.pickup(ctx, key, item)
	case d.Status.Phase == api.DeployProgressing:
		return k.work(ctx, key, item)
	default:
		trace.Exit(ctx, "phase %s is up to date for generation %d: nothing to do", d.Status.Phase, d.Generation)
		return controller.Result{}, nil
	}
}

// pickup writes the pickup and starts the work.
func (k *Controller) pickup(ctx context.Context, key string, item *Item) (controller.Result, error) {
	d := item.DeployItem
	st := d.Status
	st.Phase, st.ObservedGeneration, st.LastError, st.ExportRef = api.DeployProgressing, d.Generation, nil, ""
	st.LastReconcileTime = nextReconcileTime(k.opts.Now(), d)
	d.Status = st
	if err := k.resolve(ctx, item); err != nil && !errors.Is(err, api.ErrNotFound) {
		return controller.Result{}, err
	}
	if k.opts.Stateless && (item.Spec.Target == "" || item.Target != nil) {
		out, err := k.d.Reconcile(ctx, item)
		if err != nil {
			return controller.Result{}, err
		}
		if out.Done {
			if err := k.finish(ctx, key, item, out); err != nil {
				return controller.Result{}, err
			}
			return controller.Result{}, k.claim(ctx, key, item)
		}
	}
	if err := k.writeStatus(ctx, key, d); err != nil {
		return controller.Result{}, err
	}
	trace.Action(ctx, "picked up: phase Progressing, lastReconcileTime %s", st.LastReconcileTime.Format(time.RFC3339))
	if err := k.claim(ctx, key, item); err != nil {
		return controller.Result{}, err
	}
	return k.work(ctx, key, item)
}

// nextReconcileTime is the item's next lastReconcileTime: now to the
// second, or a second after the last one when that is not later, so that
// each pickup (and each uninstall attempt) gets a time of its own, which
// names its run; and never before the reconcile-time annotation it
// answers (rounded up to the second), so that the timeout controller sees
// the request picked up.
func nextReconcileTime(now time.Time, d *api.DeployItem) time.Time {
	last := d.Status.LastReconcileTime
	t := now.UTC().Truncate(time.Second)
	if !t.After(last) {
		t = last.Add(time.Second)
	}
	if asked, err := time.Parse(time.RFC3339, d.Annotations[api.AnnotationReconcileTime]); err == nil && t.Before(asked) {
		t = asked.UTC().Truncate(time.Second)
		if t.Before(asked) {
			t = t.Add(time.Second)
		}
	}
	return t
}

// claim removes the operation annotation and adds the finalizer (unless
// NoUninstall), when either is needed: one metadata write at most.
func (k *Controller) claim(ctx context.Context, key string, item *Item) error {
	d := item.DeployItem
	_, asked := d.Annotations[api.AnnotationOperation]
	if !asked && (k.opts.NoUninstall || d.HasFinalizer(api.FinalizerDeployer)) {
		return nil
	}
	d.Annotations = maps.Clone(d.Annotations)
	delete(d.Annotations, api.AnnotationOperation)
	if !k.opts.NoUninstall {
		d.AddFinalizer(api.FinalizerDeployer)
	}
	return k.update(ctx, key, d)
}

// work continues the run and finishes it when it has ended.
func (k *Controller) work(ctx context.Context, key string, item *Item) (controller.Result, error) {
	if err := k.resolve(ctx, item); errors.Is(err, api.ErrNotFound) {
		return controller.Result{}, k.finish(ctx, key, item, Failed(api.ReasonTargetNotFound,
			"target %s does not exist in namespace %s", item.Spec.Target, item.Namespace))
	} else if err != nil {
		return controller.Result{}, err
	}
	// A pickup cut short between its two writes (a crash) left the item
	// without its finalizer: add it before any work.
	if err := k.claim(ctx, key, item); err != nil {
		return controller.Result{}, err
	}
	before := item.Status
	item.Record = k.recorder(key, item, &before)
	out, err := k.d.Reconcile(ctx, item)
	if err != nil {
		trace.Exit(ctx, "the %s deployer failed to act: %v", k.opts.Type, err)
		return controller.Result{}, err
	}
	if !out.Done {
		if err := k.writeProgress(ctx, key, item, before); err != nil {
			return controller.Result{}, err
		}
		trace.Exit(ctx, "Progressing: run %s goes on", item.Run)
		return controller.Result{RequeueAfter: out.RequeueAfter}, nil
	}
	return controller.Result{}, k.finish(ctx, key, item, out)
}

// finish publishes the exports and writes the final phase.
func (k *Controller) finish(ctx context.Context, key string, item *Item, out Outcome) error {
	d := item.DeployItem
	st := d.Status
	st.Phase, st.ObservedGeneration, st.LastError, st.ExportRef = out.Phase, d.Generation, nil, ""
	if out.Phase == api.DeploySucceeded && len(out.Exports) > 0 {
		ref, err := k.publish(ctx, d, out.Exports)
		if err != nil {
			return err
		}
		st.ExportRef = ref
		trace.Action(ctx, "published the exports in DataObject %s", ref)
	}
	if out.Error != nil {
		e := *out.Error
		e.Time = k.opts.Now().UTC()
		st.LastError = &e
	}
	d.Status = st
	if err := k.writeStatus(ctx, key, d); err != nil {
		return err
	}
	if st.LastError != nil {
		trace.Exit(ctx, "%s: %s: %s", st.Phase, st.LastError.Reason, st.LastError.Message)
	} else {
		trace.Exit(ctx, "%s for generation %d", st.Phase, d.Generation)
	}
	return nil
}

// abort stops the work and fails the item, then removes the abort
// annotations.
func (k *Controller) abort(ctx context.Context, key string, item *Item) error {
	d := item.DeployItem
	if err := k.resolve(ctx, item); err != nil && !errors.Is(err, api.ErrNotFound) {
		return err
	}
	if !d.Status.Phase.Completed() {
		if err := k.d.Abort(ctx, item); err != nil {
			return fmt.Errorf("deployer: abort %s: %w", key, err)
		}
		reason, msg := api.ReasonAborted, "aborted by the abort operation annotation"
		if d.Annotations[api.AnnotationAbortTimeout] == "true" {
			reason = api.ReasonProgressingTimeout
			msg = "aborted: the deployer did not finish within the progressing timeout"
		}
		trace.Action(ctx, "stopped run %s: %s", item.Run, msg)
		if err := k.finish(ctx, key, item, Failed(reason, "%s", msg)); err != nil {
			return err
		}
	}
	d.Annotations = maps.Clone(d.Annotations)
	for _, a := range []string{api.AnnotationOperation, api.AnnotationAbortTime, api.AnnotationAbortTimeout} {
		delete(d.Annotations, a)
	}
	if err := k.update(ctx, key, d); err != nil {
		return err
	}
	trace.Action(ctx, "removed the abort annotations")
	return nil
}

// deletion uninstalls the item and removes the finalizer.
func (k *Controller) deletion(ctx context.Context, key string, item *Item) (controller.Result, error) {
	d := item.DeployItem
	if !d.HasFinalizer(api.FinalizerDeployer) {
		trace.Exit(ctx, "no %s finalizer: nothing to uninstall", api.FinalizerDeployer)
		return controller.Result{}, nil
	}
	if err := k.resolve(ctx, item); err != nil && !errors.Is(err, api.ErrNotFound) {
		return controller.Result{}, err
	}
	if d.Annotations[api.AnnotationDeleteWithoutUninstall] == "true" {
		trace.Check(ctx, "%s is set: no uninstall", api.AnnotationDeleteWithoutUninstall)
		if err := k.d.Abort(ctx, item); err != nil {
			return controller.Result{}, fmt.Errorf("deployer: stop %s: %w", key, err)
		}
		return controller.Result{}, k.release(ctx, key, item)
	}
	if d.Annotations[api.AnnotationOperation] == api.OperationAbort {
		return controller.Result{}, k.abortUninstall(ctx, key, item)
	}
	if uninstallStopped(d) {
		if d.Annotations[api.AnnotationOperation] != api.OperationReconcile {
			trace.Exit(ctx, "the uninstall failed: %s (set %s: \"true\" to delete without it, or the reconcile operation to retry it)",
				d.Status.LastError.Message, api.AnnotationDeleteWithoutUninstall)
			return controller.Result{}, nil
		}
		// A retry: a new lastReconcileTime identifies a new attempt.
		d.Status.Phase, d.Status.LastError = api.DeployDeleting, nil
		d.Status.LastReconcileTime = nextReconcileTime(k.opts.Now(), d)
		if err := k.writeStatus(ctx, key, d); err != nil {
			return controller.Result{}, err
		}
		d.Annotations = maps.Clone(d.Annotations)
		delete(d.Annotations, api.AnnotationOperation)
		if err := k.update(ctx, key, d); err != nil {
			return controller.Result{}, err
		}
		trace.Action(ctx, "retrying the uninstall, as the reconcile operation asks")
		return controller.Result{}, nil
	}
	before := d.Status
	item.Record = k.recorder(key, item, &before)
	out, err := k.d.Delete(ctx, item)
	if err != nil {
		return controller.Result{}, err
	}
	switch {
	case !out.Done:
		if d.Status.Phase != api.DeployDeleting || progressed(before, d.Status) {
			d.Status.Phase = api.DeployDeleting
			k.stampError(item)
			if err := k.writeStatus(ctx, key, d); err != nil {
				return controller.Result{}, err
			}
		}
		trace.Exit(ctx, "Deleting: waiting for the %s deployer's uninstall to end", k.opts.Type)
		return controller.Result{RequeueAfter: out.RequeueAfter}, nil
	case out.Phase == api.DeployFailed:
		msg := "the uninstall failed"
		if out.Error != nil {
			msg = out.Error.Message
		}
		d.Status.Phase = api.DeployFailed
		d.Status.LastError = &api.LastError{Reason: api.ReasonUninstallFailed, Message: msg, Time: k.opts.Now().UTC()}
		if err := k.writeStatus(ctx, key, d); err != nil {
			return controller.Result{}, err
		}
		trace.Exit(ctx, "Failed: the uninstall failed: %s", msg)
		return controller.Result{}, nil
	}
	trace.Action(ctx, "uninstalled")
	return controller.Result{}, k.release(ctx, key, item)
}

// uninstallStopped reports whether the item's uninstall failed, was
// aborted, or timed out aborting: it waits for the way out the message
// names (delete-without-uninstall) or a retry (the reconcile operation).
func uninstallStopped(d *api.DeployItem) bool {
	if d.Status.Phase != api.DeployFailed || d.Status.LastError == nil {
		return false
	}
	r := d.Status.LastError.Reason
	return r == api.ReasonUninstallFailed || r == api.ReasonAbortingTimeout
}

// abortUninstall honours an abort during the deletion (asked by hand, or
// by the progressing timeout): it stops the uninstall, fails the item
// naming the ways out, and removes the abort annotations.
func (k *Controller) abortUninstall(ctx context.Context, key string, item *Item) error {
	d := item.DeployItem
	if err := k.d.Abort(ctx, item); err != nil {
		return fmt.Errorf("deployer: abort the uninstall of %s: %w", key, err)
	}
	why := "the uninstall was aborted by the abort operation annotation"
	if d.Annotations[api.AnnotationAbortTimeout] == "true" {
		why = "the uninstall did not finish within the progressing timeout and was aborted"
	}
	msg := fmt.Sprintf("%s; annotate %s: \"true\" to delete the item without its uninstall, or set the reconcile operation to try it again",
		why, api.AnnotationDeleteWithoutUninstall)
	d.Status.Phase = api.DeployFailed
	d.Status.LastError = &api.LastError{Reason: api.ReasonUninstallFailed, Message: msg, Time: k.opts.Now().UTC()}
	if err := k.writeStatus(ctx, key, d); err != nil {
		return err
	}
	trace.Action(ctx, "stopped the uninstall: %s", why)
	d.Annotations = maps.Clone(d.Annotations)
	for _, a := range []string{api.AnnotationOperation, api.AnnotationAbortTime, api.AnnotationAbortTimeout} {
		delete(d.Annotations, a)
	}
	if err := k.update(ctx, key, d); err != nil {
		return err
	}
	trace.Exit(ctx, "Failed: %s", msg)
	return nil
}

// release removes the deployer's finalizer once the uninstall is done (or
// skipped). A Conflict re-reads the item and tries again (conflict.Modify),
// so that a finished uninstall is never run a second time because the item
// changed meanwhile; then a Deployer that implements Forgetter forgets the
// item.
func (k *Controller) release(ctx context.Context, key string, item *Item) error {
	d := item.DeployItem
	get := func(ctx context.Context) (*api.DeployItem, error) {
		obj, err := k.c.Get(ctx, api.KindDeployItem, d.Namespace, d.Name)
		if err != nil {
			return nil, fmt.Errorf("deployer: re-read %s: %w", key, err)
		}
		fresh, err := controller.Decode[*api.DeployItem](obj)
		if err != nil {
			return nil, fmt.Errorf("deployer: %w", err)
		}
		return fresh, nil
	}
	remove := func(cur *api.DeployItem) (bool, error) {
		if cur.UID != d.UID {
			return false, nil // another item now: this one is gone
		}
		cur.RemoveFinalizer(api.FinalizerDeployer)
		return true, nil
	}
	write := func(ctx context.Context, cur *api.DeployItem) (*api.DeployItem, error) {
		return cur, k.update(ctx, key, cur)
	}
	if _, _, err := conflict.Modify(ctx, d, get, remove, write); err != nil && !errors.Is(err, api.ErrNotFound) {
		return err
	}
	trace.Action(ctx, "removed finalizer %s", api.FinalizerDeployer)
	if f, ok := k.d.(Forgetter); ok {
		if err := f.Forget(ctx, item); err != nil {
			k.log.Warn("deployer: forget a deleted item", "item", key, "err", err)
		}
	}
	trace.Exit(ctx, "deleted")
	return nil
}

// resolve sets the item's run id and reads its target; a target that
// does not exist is an error wrapping api.ErrNotFound (Item.Target stays
// nil).
func (k *Controller) resolve(ctx context.Context, item *Item) error {
	d := item.DeployItem
	item.Run = RunID(d.UID, d.Generation, d.Status.LastReconcileTime)
	if d.Spec.Target == "" || item.Target != nil {
		return nil
	}
	obj, err := k.c.Get(ctx, api.KindTarget, d.Namespace, d.Spec.Target)
	if err != nil {
		return fmt.Errorf("deployer: read target %s of %s: %w", d.Spec.Target, d.Name, err)
	}
	var t api.Target
	if err := obj.Into(&t); err != nil {
		return fmt.Errorf("deployer: decode target %s: %w", d.Spec.Target, err)
	}
	item.Target = &t
	return nil
}

// RunID is the id of a run: "di-<uid>-<generation>-<unix seconds>",
// lower-case, at most runtime.MaxIDLength characters
// (api.DeployItemRunID: the API serves the run's logs by it).
func RunID(uid string, gen int64, at time.Time) string { return api.DeployItemRunID(uid, gen, at) }

// RunPrefix is the prefix of every run id of the item with uid.
func RunPrefix(uid string) string { return api.DeployItemRunPrefix(uid) }

// publish writes exports into the item's export DataObject
// (client.Publish: created, or updated unless it holds them already).
func (k *Controller) publish(ctx context.Context, d *api.DeployItem, exports json.RawMessage) (string, error) {
	name := ExportName(d.Name)
	obj, err := api.FromResource(&api.DataObject{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindDataObject},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: d.Namespace,
			OwnerReferences: []api.OwnerReference{api.OwnerRefTo(d, true)}},
		Data: exports,
	})
	if err != nil {
		return "", err
	}
	if err := client.Publish(ctx, k.c, obj, "data"); err != nil {
		return "", fmt.Errorf("deployer: exports of %s: %w", d.Name, err)
	}
	return name, nil
}

// ExportName is the name of the DataObject holding deploy item item's
// exports: "<item>-export", shortened with a hash when too long.
func ExportName(item string) string {
	name := item + "-export"
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(item))
	return name[:54] + "-" + hex.EncodeToString(sum[:4])
}

func (k *Controller) writeStatus(ctx context.Context, key string, d *api.DeployItem) error {
	obj, err := controller.StatusUpdate(d, d.Status)
	if err != nil {
		return err
	}
	out, err := k.c.UpdateStatus(ctx, obj)
	if err != nil {
		return fmt.Errorf("deployer: write status of %s: %w", key, err)
	}
	d.ResourceVersion = out.ResourceVersion
	k.written.Wrote(key, out.ResourceVersion)
	return nil
}

// writeProgress writes the item's status when its Deployer changed
// status.providerStatus or status.lastError (from before) in an
// unfinished run, so that progress shows before the final write.
func (k *Controller) writeProgress(ctx context.Context, key string, item *Item, before api.DeployItemStatus) error {
	if !progressed(before, item.Status) {
		return nil
	}
	k.stampError(item)
	return k.writeStatus(ctx, key, item.DeployItem)
}

// recorder is an Item's Record: it writes the item's status at once and,
// once written, makes it *written, the status the next progress write
// compares with (so it is not written twice).
func (k *Controller) recorder(key string, item *Item, written *api.DeployItemStatus) func(context.Context) error {
	return func(ctx context.Context) error {
		k.stampError(item)
		if err := k.writeStatus(ctx, key, item.DeployItem); err != nil {
			return err
		}
		*written = item.Status
		return nil
	}
}

// stampError gives the time to a lastError its Deployer set without one.
func (k *Controller) stampError(item *Item) {
	if e := item.Status.LastError; e != nil && e.Time.IsZero() {
		stamped := *e
		stamped.Time = k.opts.Now().UTC()
		item.Status.LastError = &stamped
	}
}

// progressed reports whether a Deployer changed what it may report while
// unfinished: status.providerStatus or status.lastError.
func progressed(before, after api.DeployItemStatus) bool {
	if !bytes.Equal(before.ProviderStatus, after.ProviderStatus) {
		return true
	}
	a, b := before.LastError, after.LastError
	return (a == nil) != (b == nil) || a != nil && (a.Reason != b.Reason || a.Message != b.Message)
}

func (k *Controller) update(ctx context.Context, key string, d *api.DeployItem) error {
	obj, err := api.FromResource(d)
	if err != nil {
		return err
	}
	out, err := k.c.Update(ctx, obj)
	if err != nil {
		return fmt.Errorf("deployer: update %s: %w", key, err)
	}
	d.ResourceVersion = out.ResourceVersion
	k.written.Wrote(key, out.ResourceVersion)
	return nil
}

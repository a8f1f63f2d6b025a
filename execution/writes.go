package execution

// The writes of the execution controller: deploy items, their deletion,
// the export DataObject, and the execution's own status and metadata.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/trace"
)

// apply creates or updates the deploy item of template t (cur is its
// resource, nil when missing) and returns its generation and name. The
// item gets the reconcile-time annotation (the base of the pickup
// timeout). A new item, or one whose spec changes, has a status that is
// not up to date, which makes its deployer pick it up; an item whose spec
// stays as it is gets the reconcile operation annotation instead.
func (r *Reconciler) apply(ctx context.Context, e *api.Execution, t api.DeployItemTemplate, cur *api.Object) (int64, string, error) {
	var d api.DeployItem
	if cur != nil {
		if err := cur.Into(&d); err != nil {
			return 0, "", fmt.Errorf("execution: decode deploy item %s: %w", cur.Name, err)
		}
	} else {
		d = api.DeployItem{
			TypeMeta:   api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindDeployItem},
			ObjectMeta: api.ObjectMeta{Name: ItemName(e.Name, t.Name), Namespace: e.Namespace},
		}
	}
	d.Labels = maps.Clone(d.Labels)
	if d.Labels == nil {
		d.Labels = map[string]string{}
	}
	d.Labels[api.LabelExecution], d.Labels[api.LabelDeployItemName] = e.Name, t.Name
	if inst := e.Labels[api.LabelInstallation]; inst != "" {
		d.Labels[api.LabelInstallation] = inst
	}
	d.Annotations = maps.Clone(d.Annotations)
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	// RFC 3339 with the nanoseconds: a deployer's pickup within the same
	// second as an earlier one is not mistaken for a pickup of this request.
	d.Annotations[api.AnnotationReconcileTime] = r.opts.Now().UTC().Format(time.RFC3339Nano)
	if cr := d.ControllerRef(); cr == nil || cr.UID != e.UID {
		d.OwnerReferences = append(dropController(d.OwnerReferences), api.OwnerRefTo(e, true))
	}
	spec := api.DeployItemSpec{Type: t.Type, Target: t.Target, Config: t.Config, Timeout: t.Timeout}
	if cur != nil && sameSpec(d.Spec, spec) {
		// The generation will not move: the operation tells the deployer.
		d.Annotations[api.AnnotationOperation] = api.OperationReconcile
	}
	d.Spec = spec
	obj, err := api.FromResource(&d)
	if err != nil {
		return 0, "", fmt.Errorf("execution: encode deploy item: %w", err)
	}
	var out *api.Object
	if cur == nil {
		out, err = r.c.Create(ctx, obj)
		if errors.Is(err, api.ErrAlreadyExists) {
			// Created by an earlier run whose status write was lost: the
			// next reconcile finds it and updates it.
			return 0, "", fmt.Errorf("execution: deploy item %s exists but is not in the cache yet: %w", obj.Name, err)
		}
	} else {
		out, err = r.c.Update(ctx, obj)
	}
	if err != nil {
		return 0, "", fmt.Errorf("execution: write deploy item %s: %w", obj.Name, err)
	}
	return out.Generation, out.Name, nil
}

func sameSpec(a, b api.DeployItemSpec) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return api.SameJSON(x, y)
}

func dropController(refs []api.OwnerReference) []api.OwnerReference {
	var out []api.OwnerReference
	for _, r := range refs {
		if !r.Controller {
			out = append(out, r)
		}
	}
	return out
}

// deleteItem deletes a deploy item (guarded by its uid), passing on the
// execution's delete-without-uninstall annotation first.
func (r *Reconciler) deleteItem(ctx context.Context, e *api.Execution, o *api.Object) error {
	if o == nil {
		return nil
	}
	if e.Annotations[api.AnnotationDeleteWithoutUninstall] == "true" {
		if err := r.markWithoutUninstall(ctx, o); err != nil {
			return err
		}
	}
	_, _, err := r.c.Delete(ctx, api.KindDeployItem, o.Namespace, o.Name, api.DeleteOptions{Preconditions: api.Preconditions{UID: o.UID}})
	if err != nil && !errors.Is(err, api.ErrNotFound) {
		return fmt.Errorf("execution: delete deploy item %s: %w", o.Name, err)
	}
	return nil
}

// markWithoutUninstall sets delete-without-uninstall on a deploy item.
func (r *Reconciler) markWithoutUninstall(ctx context.Context, o *api.Object) error {
	if o.Annotations[api.AnnotationDeleteWithoutUninstall] == "true" {
		return nil
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"true"}}}`, api.AnnotationDeleteWithoutUninstall)
	if _, err := r.c.Patch(ctx, api.KindDeployItem, o.Namespace, o.Name, patch, false); err != nil && !errors.Is(err, api.ErrNotFound) {
		return fmt.Errorf("execution: mark deploy item %s delete-without-uninstall: %w", o.Name, err)
	}
	return nil
}

// collectExports gathers the exports of every deploy item (by spec name)
// into the execution's export DataObject and returns its name.
func (r *Reconciler) collectExports(ctx context.Context, e *api.Execution, items map[string]*Item) (string, error) {
	all := map[string]json.RawMessage{}
	for _, t := range e.Spec.DeployItems {
		it := items[t.Name]
		if it == nil || it.ExportRef == "" {
			continue
		}
		o, err := r.c.Get(ctx, api.KindDataObject, e.Namespace, it.ExportRef)
		switch {
		case errors.Is(err, api.ErrNotFound):
			return "", fmt.Errorf("execution: deploy item %s names export %s, which does not exist: %w", t.Name, it.ExportRef, err)
		case err != nil:
			return "", fmt.Errorf("execution: read exports of deploy item %s: %w", t.Name, err)
		}
		if data := o.Field("data"); len(data) > 0 {
			all[t.Name] = data
		}
	}
	data, err := json.Marshal(all)
	if err != nil {
		return "", fmt.Errorf("execution: encode exports: %w", err)
	}
	name := ExportName(e.Name)
	obj, err := api.FromResource(&api.DataObject{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindDataObject},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: e.Namespace,
			Labels:          map[string]string{api.LabelExecution: e.Name},
			OwnerReferences: []api.OwnerReference{api.OwnerRefTo(e, true)}},
		Data: data,
	})
	if err != nil {
		return "", err
	}
	if err := client.Publish(ctx, r.c, obj, "data"); err != nil {
		return "", fmt.Errorf("execution: exports of %s: %w", e.Name, err)
	}
	return name, nil
}

// writeStatus writes st as e's status unless it is unchanged.
func (r *Reconciler) writeStatus(ctx context.Context, key string, e *api.Execution, st api.ExecutionStatus) error {
	controller.KeepErrorTime(e.Status.LastError, st.LastError)
	if !controller.StatusChanged(e.Status, st) {
		return nil
	}
	e.Status = st
	obj, err := controller.StatusUpdate(e, st)
	if err != nil {
		return err
	}
	out, err := r.c.UpdateStatus(ctx, obj)
	if err != nil {
		return fmt.Errorf("execution: write status of %s: %w", key, err)
	}
	e.ResourceVersion = out.ResourceVersion
	r.written.Wrote(key, out.ResourceVersion)
	return nil
}

// update writes e's metadata (finalizers, annotations).
func (r *Reconciler) update(ctx context.Context, key string, e *api.Execution) error {
	obj, err := api.FromResource(e)
	if err != nil {
		return err
	}
	out, err := r.c.Update(ctx, obj)
	if err != nil {
		return fmt.Errorf("execution: update %s: %w", key, err)
	}
	e.ResourceVersion, e.Generation = out.ResourceVersion, out.Generation
	r.written.Wrote(key, out.ResourceVersion)
	return nil
}

// dropOperation removes a reconcile or force-reconcile annotation once
// the reconcile operation has run.
func (r *Reconciler) dropOperation(ctx context.Context, key string, e *api.Execution) error {
	op := e.Annotations[api.AnnotationOperation]
	if op != api.OperationReconcile && op != api.OperationForceReconcile {
		return nil
	}
	e.Annotations = maps.Clone(e.Annotations)
	delete(e.Annotations, api.AnnotationOperation)
	if err := r.update(ctx, key, e); err != nil {
		return err
	}
	trace.Action(ctx, "removed the %s annotation", op)
	return nil
}

package installation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/blueprint"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/trace"
)

// exportAndTrigger is standard steps 5 and 6 for a succeeded
// installation: it renders the export executions, publishes each export
// the installation maps as a DataObject in its context, records Succeeded
// with the new configGeneration and, when that changed, adds the reconcile
// annotation to the siblings that import the exports.
func (r *Reconciler) exportAndTrigger(ctx context.Context, inst *api.Installation, bp source, imps []Import) error {
	gen, err := r.publish(ctx, inst, bp, imps)
	if err != nil {
		return err
	}
	changed := gen != inst.Status.ConfigGeneration
	if err := r.setStatus(ctx, inst, func(s *api.InstallationStatus) {
		s.Phase = api.InstallationSucceeded
		s.ConfigGeneration = gen
		s.LastError = nil
		resetRetries(s)
	}); err != nil {
		return err
	}
	if !changed {
		trace.Check(ctx, "6. exports unchanged: no dependent to trigger")
		return nil
	}
	for _, s := range r.caches.importers(inst) {
		if s.Deleting() || s.Annotations[api.AnnotationOperation] != "" {
			continue
		}
		if err := r.annotate(ctx, api.KindInstallation, &s.ObjectMeta, map[string]string{api.AnnotationOperation: api.OperationReconcile}); err != nil {
			return err
		}
		trace.Action(ctx, "6. triggered dependent %s (reconcile annotation)", s.Name)
	}
	return nil
}

// publish renders and writes the exports (step 5) and returns the new
// configGeneration.
func (r *Reconciler) publish(ctx context.Context, inst *api.Installation, bp source, imps []Import) (string, error) {
	if len(inst.Spec.Exports.Data) == 0 {
		trace.Check(ctx, "5. no exports to publish")
		return "", nil
	}
	if bp.err != nil {
		return "", fail(ReasonBlueprintNotFound, bp.err)
	}
	_, data := importValues(imps)
	d := blueprint.Data{Imports: data, DeployItems: map[string]any{}, Subinstallations: map[string]any{}}
	if e := r.caches.execution(inst); e != nil {
		for _, ref := range e.Status.DeployItems {
			it, ok := get[*api.DeployItem](r.caches.items, e.Namespace, ref.Ref)
			if ok && it.Status.ExportRef != "" {
				d.DeployItems[ref.Name] = r.dataOf(e.Namespace, it.Status.ExportRef)
			}
		}
	}
	for _, ref := range inst.Status.Subinstallations {
		sub, ok := get[*api.Installation](r.caches.insts, inst.Namespace, ref.Ref)
		if !ok {
			continue
		}
		ex := map[string]any{}
		for _, e := range sub.Spec.Exports.Data {
			ex[e.Name] = r.dataOf(inst.Namespace, DataObjectName(inst.Name, e.DataRef))
		}
		d.Subinstallations[ref.Name] = ex
	}
	exports, err := blueprint.RenderExports(bp.spec, d)
	if err != nil {
		return "", fail(ReasonRenderFailed, err)
	}
	vals := map[string]blueprint.ImportValue{}
	var declared []api.ParameterDefinition
	for _, def := range bp.spec.Exports {
		if v, ok := exports[def.Name]; ok {
			vals[def.Name] = blueprint.ImportValue{Value: v}
			declared = append(declared, def)
		}
	}
	if err := blueprint.ValidateImports(declared, vals); err != nil {
		return "", fail(ReasonRenderFailed, fmt.Errorf("export does not match the blueprint: %w", err))
	}
	context := contextOf(&inst.ObjectMeta)
	published := map[string]json.RawMessage{}
	for _, e := range inst.Spec.Exports.Data {
		v, ok := exports[e.Name]
		if !ok {
			return "", fail(ReasonRenderFailed, fmt.Errorf("export %q is not rendered by the blueprint's exportExecutions", e.Name))
		}
		if err := r.writeData(ctx, inst, context, e.DataRef, v); err != nil {
			return "", err
		}
		published[e.DataRef] = v
	}
	keys := make([]string, 0, len(published))
	for k := range published {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	trace.Action(ctx, "5. exports published as %v in context %q", keys, context)
	return Hash(published), nil
}

// writeData creates or updates the DataObject holding dataRef in context,
// owned by inst.
func (r *Reconciler) writeData(ctx context.Context, inst *api.Installation, context, dataRef string, v json.RawMessage) error {
	dos := client.For[*api.DataObject](r.c)
	name := DataObjectName(context, dataRef)
	labels := map[string]string{api.LabelInstallation: inst.Name, api.LabelDataRef: dataRef}
	if context != "" {
		labels[api.LabelContext] = context
	}
	cur, ok := get[*api.DataObject](r.caches.data, inst.Namespace, name)
	if !ok {
		_, err := dos.Create(ctx, &api.DataObject{ObjectMeta: api.ObjectMeta{Name: name, Namespace: inst.Namespace, Labels: labels,
			OwnerReferences: []api.OwnerReference{api.OwnerRefTo(inst, true)}}, Data: v})
		if err == nil {
			return nil
		}
		if !errors.Is(err, api.ErrAlreadyExists) {
			return fmt.Errorf("create DataObject %s: %w", name, err)
		}
		if cur, err = dos.Get(ctx, inst.Namespace, name); err != nil {
			return fmt.Errorf("read DataObject %s: %w", name, err)
		}
	}
	if ref := cur.ControllerRef(); ref == nil || ref.UID != inst.UID {
		owner := "nobody"
		if ref != nil {
			owner = ref.Kind + " " + ref.Name
		}
		return fail(ReasonRenderFailed, fmt.Errorf("export %s: DataObject %s already exists, owned by %s", dataRef, name, owner))
	}
	if jsonEqual(cur.Data, v) {
		return nil
	}
	next := *cur
	next.Data = v
	if _, err := dos.Update(ctx, &next); err != nil {
		return fmt.Errorf("update DataObject %s: %w", name, err)
	}
	return nil
}

package installation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/blueprint"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/trace"
)

// exportAndTrigger is standard steps 5 and 6 for a succeeded
// installation: it renders the export executions, publishes each export
// the installation maps as a DataObject or a Target in its context,
// records Succeeded with the new configGeneration and, when that changed,
// adds the reconcile annotation to the siblings that import the exports
// (but those that rendered with them already: see HasImported).
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
		if HasImported(s, inst, gen) {
			trace.Check(ctx, "6. dependent %s rendered with these exports already", s.Name)
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
// configGeneration: a hash of what it published. Data exports become
// DataObjects, target exports Targets, in the installation's context.
func (r *Reconciler) publish(ctx context.Context, inst *api.Installation, bp source, imps []Import) (string, error) {
	if len(inst.Spec.Exports.Data) == 0 && len(inst.Spec.Exports.Targets) == 0 {
		trace.Check(ctx, "5. no exports to publish")
		return "", nil
	}
	if bp.err != nil {
		return "", fail(api.ReasonBlueprintNotFound, bp.err)
	}
	exports, err := r.render(ctx, inst, bp.spec, imps)
	if err != nil {
		return "", err
	}
	context := contextOf(&inst.ObjectMeta)
	// published holds what was published by dataRef, and by "target/"
	// and the target's name (a dataRef has no "/"), so that the hash of
	// data exports alone is what it always was.
	published := map[string]json.RawMessage{}
	for _, e := range inst.Spec.Exports.Data {
		v, ok := exports[e.Name]
		if !ok {
			return "", fail(api.ReasonRenderFailed, fmt.Errorf("export %q is not rendered by the blueprint's exportExecutions", e.Name))
		}
		if err := r.writeExport(ctx, inst, r.caches.data, export{kind: api.KindDataObject, field: "data", ref: e.DataRef,
			refLabel: api.LabelDataRef, context: context, value: v}); err != nil {
			return "", err
		}
		published[e.DataRef] = v
	}
	for _, e := range inst.Spec.Exports.Targets {
		v, ok := exports[e.Name]
		if !ok {
			return "", fail(api.ReasonRenderFailed, fmt.Errorf("export %q is not rendered by the blueprint's exportExecutions", e.Name))
		}
		spec, err := TargetSpecOf(e.Name, declaredType(bp.spec, e.Name), v)
		if err != nil {
			return "", fail(api.ReasonRenderFailed, err)
		}
		raw, _ := json.Marshal(spec)
		if err := r.writeExport(ctx, inst, r.caches.targets, export{kind: api.KindTarget, field: "spec", ref: e.Target,
			refLabel: api.LabelTargetRef, context: context, value: raw}); err != nil {
			return "", err
		}
		published["target/"+e.Target] = raw
	}
	keys := make([]string, 0, len(published))
	for k := range published {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	trace.Action(ctx, "5. exports published as %v in context %q", keys, context)
	return Hash(published), nil
}

// render runs the export executions over the imports, the deploy items'
// exports and the nested installations' exports, and checks the result
// against the blueprint's export declarations. The exports it renders from
// are read through the API, not the caches: an informer of DataObjects
// may not have seen yet what the execution or a nested installation
// published before its status said Succeeded, and exports rendered from
// it would be wrong for good.
func (r *Reconciler) render(ctx context.Context, inst *api.Installation, bp *api.BlueprintSpec, imps []Import) (map[string]json.RawMessage, error) {
	_, d := importValues(imps)
	d.DeployItems, d.Subinstallations = map[string]any{}, map[string]any{}
	if e := r.caches.execution(inst); e != nil && e.Status.ExportRef != "" {
		all, err := r.readData(ctx, e.Namespace, e.Status.ExportRef)
		if err != nil {
			return nil, err
		}
		if m, ok := all.(map[string]any); ok {
			maps.Copy(d.DeployItems, m)
		}
	}
	for _, ref := range inst.Status.Subinstallations {
		sub, ok := get[*api.Installation](r.caches.insts, inst.Namespace, ref.Ref)
		if !ok {
			continue
		}
		ex := map[string]any{}
		for _, e := range sub.Spec.Exports.Data {
			v, err := r.readData(ctx, inst.Namespace, DataObjectName(inst.Name, e.DataRef))
			if err != nil {
				return nil, err
			}
			ex[e.Name] = v
		}
		for _, e := range sub.Spec.Exports.Targets {
			v, err := r.readTarget(ctx, inst.Namespace, TargetName(inst.Name, e.Target))
			if err != nil {
				return nil, err
			}
			ex[e.Name] = v
		}
		d.Subinstallations[ref.Name] = ex
	}
	exports, err := blueprint.RenderExports(bp, d)
	if err != nil {
		return nil, fail(api.ReasonRenderFailed, err)
	}
	vals := map[string]blueprint.ImportValue{}
	var declared []api.ParameterDefinition
	for _, def := range bp.Exports {
		if v, ok := exports[def.Name]; ok {
			vals[def.Name] = blueprint.ImportValue{Value: v}
			declared = append(declared, def)
		}
	}
	if err := blueprint.ValidateImports(declared, vals); err != nil {
		return nil, fail(api.ReasonRenderFailed, fmt.Errorf("export does not match the blueprint: %w", err))
	}
	return exports, nil
}

// declaredType is the type the blueprint declares export name with: data,
// target, or "" when it does not declare it.
func declaredType(bp *api.BlueprintSpec, name string) string {
	for _, def := range bp.Exports {
		if def.Name == name {
			if def.Type == "" {
				return api.ParameterData
			}
			return def.Type
		}
	}
	return ""
}

// export is one object an installation publishes in its context: a
// DataObject (field data) or a Target (field spec) named ref there.
type export struct {
	kind, field, ref, refLabel, context string
	value                               json.RawMessage
}

// writeExport creates or updates the object of x in inst's namespace,
// owned by inst (its controller), unless it holds x.value already. An
// object of that name that inst does not own is a failure: the export
// would take it over.
func (r *Reconciler) writeExport(ctx context.Context, inst *api.Installation, cache *informer.Informer, x export) error {
	name := DataObjectName(x.context, x.ref)
	cur, ok := cache.Get(inst.Namespace, name)
	if !ok {
		labels := map[string]string{api.LabelInstallation: inst.Name, x.refLabel: x.ref}
		if x.context != "" {
			labels[api.LabelContext] = x.context
		}
		obj := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: x.kind},
			ObjectMeta: api.ObjectMeta{Name: name, Namespace: inst.Namespace, Labels: labels,
				OwnerReferences: []api.OwnerReference{api.OwnerRefTo(inst, true)}},
			Fields: map[string]json.RawMessage{x.field: x.value}}
		_, err := r.c.Create(ctx, obj)
		if err == nil {
			return nil
		}
		if !errors.Is(err, api.ErrAlreadyExists) {
			return fmt.Errorf("create %s %s: %w", x.kind, name, err)
		}
		if cur, err = r.c.Get(ctx, x.kind, inst.Namespace, name); err != nil {
			return fmt.Errorf("read %s %s: %w", x.kind, name, err)
		}
	}
	if ref := cur.ControllerRef(); ref == nil || ref.UID != inst.UID {
		owner := "nobody"
		if ref != nil {
			owner = ref.Kind + " " + ref.Name
		}
		return fail(api.ReasonRenderFailed, fmt.Errorf("export %s: %s %s already exists, owned by %s", x.ref, x.kind, name, owner))
	}
	if sameValue(cur.Field(x.field), x.value) {
		return nil
	}
	next := cur.DeepCopy()
	next.SetField(x.field, x.value)
	if _, err := r.c.Update(ctx, next); err != nil {
		return fmt.Errorf("update %s %s: %w", x.kind, name, err)
	}
	return nil
}

// sameValue reports whether a and b are the same JSON value, whatever the
// order of their keys.
func sameValue(a, b json.RawMessage) bool {
	return jsonEqual(decodeJSON(a), decodeJSON(b))
}

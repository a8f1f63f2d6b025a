package installation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"sort"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/blueprint"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/conflict"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/trace"
)

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

func expectKey(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

// expectWrite records that this controller wrote obj at rv.
func (r *Reconciler) expectWrite(kind, ns, name, rv string) {
	r.expect.Wrote(expectKey(kind, ns, name), rv)
}

// expectFor bounds how long an expectation holds (controller.Written).
const expectFor = controller.WrittenFor

// forget drops the expectation of an object that is gone.
func (r *Reconciler) forget(kind, ns, name string) {
	r.expect.Forget(expectKey(kind, ns, name))
}

// fresh reports whether the cached version rv ("" when the cache has no
// such object) is at least the version this controller last wrote.
func (r *Reconciler) fresh(kind, ns, name, rv string) bool {
	return !r.expect.Stale(expectKey(kind, ns, name), rv)
}

// updateMeta changes inst's metadata (finalizers, annotations) with a
// compare-and-swap write, and keeps inst current.
func (r *Reconciler) updateMeta(ctx context.Context, inst *api.Installation, change func(m *api.ObjectMeta)) error {
	next := *inst
	next.ObjectMeta = *inst.DeepCopy()
	change(&next.ObjectMeta)
	if reflect.DeepEqual(next.ObjectMeta, inst.ObjectMeta) {
		return nil
	}
	// Someone else may change the object meanwhile (an annotation, a
	// status): the change is then re-applied to the current metadata.
	out, err := r.writeFresh(ctx, inst, &next, client.For[*api.Installation](r.c).Update, func(fresh *api.Installation) *api.Installation {
		n := *fresh
		n.ObjectMeta = *fresh.DeepCopy()
		change(&n.ObjectMeta)
		return &n
	})
	if errors.Is(err, api.ErrNotFound) && inst.Deleting() {
		r.forget(api.KindInstallation, inst.Namespace, inst.Name)
		return nil // the last finalizer went: the installation is gone
	}
	if err != nil {
		return fmt.Errorf("installation %s: update: %w", inst.Name, err)
	}
	r.expectWrite(api.KindInstallation, out.Namespace, out.Name, out.ResourceVersion)
	*inst = *out
	return nil
}

// writeFresh writes next with write; on a Conflict it re-reads the
// installation and, while its uid and generation are still those of inst
// (the ones this reconcile worked on), writes redo(fresh) instead, as
// conflict.Modify retries. Otherwise the error is a Conflict saying it
// changed while reconciling.
func (r *Reconciler) writeFresh(ctx context.Context, inst, next *api.Installation,
	write func(context.Context, *api.Installation) (*api.Installation, error),
	redo func(fresh *api.Installation) *api.Installation) (*api.Installation, error) {
	get := func(ctx context.Context) (*api.Installation, error) {
		fresh, err := client.For[*api.Installation](r.c).Get(ctx, inst.Namespace, inst.Name)
		if err != nil {
			return nil, err
		}
		if fresh.UID != inst.UID || fresh.Generation != inst.Generation {
			return nil, fmt.Errorf("changed while reconciling: %w", api.ErrConflict)
		}
		return redo(fresh), nil
	}
	always := func(*api.Installation) (bool, error) { return true, nil }
	out, _, err := conflict.Modify(ctx, next, get, always, write)
	return out, err
}

// setStatus changes inst's status with a compare-and-swap write (none when
// nothing changes) and keeps inst current.
func (r *Reconciler) setStatus(ctx context.Context, inst *api.Installation, change func(s *api.InstallationStatus)) error {
	next := *inst
	raw, _ := json.Marshal(inst.Status)
	var st api.InstallationStatus
	_ = json.Unmarshal(raw, &st)
	change(&st)
	if !controller.StatusChanged(inst.Status, st) {
		return nil
	}
	next.Status = st
	// Someone else may change the object meanwhile (usually an
	// annotation): while its generation is the one this reconcile worked
	// on, the status change still holds and is re-applied.
	out, err := r.writeFresh(ctx, inst, &next, r.updateStatus, func(fresh *api.Installation) *api.Installation {
		n := *fresh
		change(&n.Status)
		return &n
	})
	if err != nil {
		return fmt.Errorf("installation %s: update status: %w", inst.Name, err)
	}
	r.expectWrite(api.KindInstallation, out.Namespace, out.Name, out.ResourceVersion)
	*inst = *out
	return nil
}

// updateStatus writes next's status: only its metadata and status are
// sent (see controller.StatusUpdate).
func (r *Reconciler) updateStatus(ctx context.Context, next *api.Installation) (*api.Installation, error) {
	next.APIVersion, next.Kind = api.APIVersion, api.KindInstallation
	obj, err := controller.StatusUpdate(next, next.Status)
	if err != nil {
		return nil, err
	}
	out, err := r.c.UpdateStatus(ctx, obj)
	if err != nil {
		return nil, err
	}
	return controller.Decode[*api.Installation](out)
}

func (r *Reconciler) setOperation(ctx context.Context, inst *api.Installation, op string) error {
	return r.updateMeta(ctx, inst, func(m *api.ObjectMeta) {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[api.AnnotationOperation] = op
	})
}

func (r *Reconciler) dropOperation(ctx context.Context, inst *api.Installation) error {
	if _, ok := inst.Annotations[api.AnnotationOperation]; !ok {
		return nil
	}
	return r.updateMeta(ctx, inst, func(m *api.ObjectMeta) { delete(m.Annotations, api.AnnotationOperation) })
}

// annotate sets annotations on another object (an execution or a nested
// installation) through a merge patch, skipping those already set.
func (r *Reconciler) annotate(ctx context.Context, kind string, m *api.ObjectMeta, set map[string]string) error {
	need := map[string]string{}
	for k, v := range set {
		if m.Annotations[k] != v {
			need[k] = v
		}
	}
	if len(need) == 0 {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": need}})
	out, err := r.c.Patch(ctx, kind, m.Namespace, m.Name, patch, false)
	if errors.Is(err, api.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s: annotate: %w", kind, m.Name, err)
	}
	r.expectWrite(kind, out.Namespace, out.Name, out.ResourceVersion)
	return nil
}

// importValues returns the values of the existing imports for their
// schemas, and the template data to render with: a Secret import as its
// references (Import.Template), listed in the data's Secrets.
func importValues(imps []Import) (map[string]blueprint.ImportValue, blueprint.Data) {
	vals := map[string]blueprint.ImportValue{}
	data := blueprint.Data{Imports: map[string]any{}}
	for _, im := range imps {
		if !im.Exists {
			continue
		}
		vals[im.Name] = blueprint.ImportValue{Value: im.Value, Secret: im.Secret}
		if len(im.Template) > 0 {
			data.Imports[im.Name] = decodeJSON(im.Template)
			data.Secrets = append(data.Secrets, im.Name)
			continue
		}
		data.Imports[im.Name] = decodeJSON(im.Value)
	}
	return vals, data
}

// update is the ✔️ of the standard and force flows: it renders the
// blueprint src with the imports and makes the execution and the nested
// installations match; op, when set, is put on them as the operation
// annotation (a nested installation whose spec did not change gets the
// reconcile annotation, so that it looks at its imports again). It
// returns the execution's name ("" when there is none) and the nested
// installations. A bad blueprint, a template error or an import failing
// its schema is a failure (see fail).
func (r *Reconciler) update(ctx context.Context, inst *api.Installation, src source, imps []Import, op string) (string, []api.NamedRef, error) {
	if src.err != nil {
		return "", nil, fail(api.ReasonBlueprintNotFound, src.err)
	}
	bp := src.spec
	vals, data := importValues(imps)
	if err := blueprint.ValidateImports(bp.Imports, vals); err != nil {
		return "", nil, fail(api.ReasonImportInvalid, err)
	}
	items, err := blueprint.RenderDeployItems(bp, data)
	if err != nil {
		return "", nil, fail(api.ReasonRenderFailed, err)
	}
	owner := api.OwnerRefTo(inst, true)
	labels := map[string]string{api.LabelInstallation: inst.Name}

	execRef, err := r.applyExecution(ctx, inst, items, owner, labels, op)
	if err != nil {
		return "", nil, forbidden(err)
	}

	want := map[string]bool{}
	var subs []api.NamedRef
	for _, t := range bp.Subinstallations {
		name := ChildName(inst.Name, t.Name)
		want[name] = true
		subs = append(subs, api.NamedRef{Name: t.Name, Ref: name})
		spec := api.InstallationSpec{Blueprint: t.Blueprint, Imports: t.Imports, Exports: t.Exports}
		if err := r.applySub(ctx, inst, name, spec, owner, labels, op); err != nil {
			return "", nil, forbidden(err)
		}
	}
	for _, s := range r.caches.subinstallations(inst) {
		if !want[s.Name] && !s.Deleting() {
			if _, _, err := r.c.Delete(ctx, api.KindInstallation, s.Namespace, s.Name, api.DeleteOptions{}); err != nil && !errors.Is(err, api.ErrNotFound) {
				return "", nil, fmt.Errorf("delete obsolete subinstallation %s: %w", s.Name, err)
			}
			r.forget(api.KindInstallation, s.Namespace, s.Name)
			trace.Action(ctx, "deleted subinstallation %s (no longer in the blueprint)", s.Name)
		}
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name < subs[j].Name })
	return execRef, subs, nil
}

func (r *Reconciler) applyExecution(ctx context.Context, inst *api.Installation, items []api.DeployItemTemplate, owner api.OwnerReference, labels map[string]string, op string) (string, error) {
	execs := client.For[*api.Execution](r.c)
	cur := r.caches.execution(inst)
	if len(items) == 0 {
		if cur != nil && !cur.Deleting() {
			if _, _, err := execs.Delete(ctx, cur.Namespace, cur.Name, api.DeleteOptions{}); err != nil && !errors.Is(err, api.ErrNotFound) {
				return "", fmt.Errorf("delete execution %s: %w", cur.Name, err)
			}
			r.forget(api.KindExecution, cur.Namespace, cur.Name)
			trace.Action(ctx, "deleted execution %s (the blueprint renders no deploy items)", cur.Name)
		}
		return "", nil
	}
	spec := api.ExecutionSpec{DeployItems: items}
	if cur == nil {
		// Created with the execution controller's finalizer: its first
		// reconcile need not add it in a write of its own.
		e := &api.Execution{ObjectMeta: api.ObjectMeta{Name: inst.Name, Namespace: inst.Namespace, Labels: labels,
			OwnerReferences: []api.OwnerReference{owner}, Finalizers: []string{api.FinalizerExecution}}, Spec: spec}
		out, err := execs.Create(ctx, e)
		if err == nil {
			r.expectWrite(api.KindExecution, out.Namespace, out.Name, out.ResourceVersion)
			trace.Action(ctx, "created execution %s with %d deploy item(s)", out.Name, len(items))
			return out.Name, nil
		}
		if !errors.Is(err, api.ErrAlreadyExists) {
			return "", fmt.Errorf("create execution %s: %w", inst.Name, err)
		}
		if cur, err = execs.Get(ctx, inst.Namespace, inst.Name); err != nil {
			return "", fmt.Errorf("read execution %s: %w", inst.Name, err)
		}
		if !controlledBy(&cur.ObjectMeta, inst) {
			return "", fail(api.ReasonRenderFailed, fmt.Errorf("execution %s exists and belongs to someone else", inst.Name))
		}
	}
	if cur.Deleting() {
		return "", fmt.Errorf("execution %s is being deleted; waiting for it to go", cur.Name)
	}
	if !jsonEqual(cur.Spec, spec) {
		next := *cur
		next.ObjectMeta = *cur.DeepCopy()
		next.Spec = spec
		if op != "" {
			next.Annotations = maps.Clone(next.Annotations)
			if next.Annotations == nil {
				next.Annotations = map[string]string{}
			}
			next.Annotations[api.AnnotationOperation] = op
		}
		out, err := execs.Update(ctx, &next)
		if err != nil {
			return "", fmt.Errorf("update execution %s: %w", cur.Name, err)
		}
		r.expectWrite(api.KindExecution, out.Namespace, out.Name, out.ResourceVersion)
		trace.Action(ctx, "updated execution %s (generation %d)", out.Name, out.Generation)
		return out.Name, nil
	}
	if op != "" {
		if err := r.annotate(ctx, api.KindExecution, &cur.ObjectMeta, map[string]string{api.AnnotationOperation: op}); err != nil {
			return "", err
		}
		trace.Action(ctx, "execution %s: operation %s", cur.Name, op)
	}
	return cur.Name, nil
}

func (r *Reconciler) applySub(ctx context.Context, inst *api.Installation, name string, spec api.InstallationSpec, owner api.OwnerReference, labels map[string]string, op string) error {
	insts := client.For[*api.Installation](r.c)
	cur, ok := get[*api.Installation](r.caches.insts, inst.Namespace, name)
	if !ok {
		// Created with this controller's finalizer (core step 2 done at
		// once, without a write of its own).
		s := &api.Installation{ObjectMeta: api.ObjectMeta{Name: name, Namespace: inst.Namespace, Labels: labels,
			OwnerReferences: []api.OwnerReference{owner}, Finalizers: []string{api.FinalizerInstallation}}, Spec: spec}
		out, err := insts.Create(ctx, s)
		if err == nil {
			r.expectWrite(api.KindInstallation, out.Namespace, out.Name, out.ResourceVersion)
			trace.Action(ctx, "created subinstallation %s", name)
			return nil
		}
		if !errors.Is(err, api.ErrAlreadyExists) {
			return fmt.Errorf("create subinstallation %s: %w", name, err)
		}
		if cur, err = insts.Get(ctx, inst.Namespace, name); err != nil {
			return fmt.Errorf("read subinstallation %s: %w", name, err)
		}
	}
	if !controlledBy(&cur.ObjectMeta, inst) {
		return fail(api.ReasonRenderFailed, fmt.Errorf("subinstallation %s exists and belongs to someone else", name))
	}
	if cur.Deleting() {
		return fmt.Errorf("subinstallation %s is being deleted; waiting for it to go", name)
	}
	if !jsonEqual(cur.Spec, spec) {
		next := *cur
		next.ObjectMeta = *cur.DeepCopy()
		next.Spec = spec
		if op != "" {
			next.Annotations = maps.Clone(next.Annotations)
			if next.Annotations == nil {
				next.Annotations = map[string]string{}
			}
			next.Annotations[api.AnnotationOperation] = op
		}
		out, err := insts.Update(ctx, &next)
		if err != nil {
			return fmt.Errorf("update subinstallation %s: %w", name, err)
		}
		r.expectWrite(api.KindInstallation, out.Namespace, out.Name, out.ResourceVersion)
		trace.Action(ctx, "updated subinstallation %s (generation %d)", name, out.Generation)
		return nil
	}
	if op == "" {
		op = api.OperationReconcile
	}
	if cur.Annotations[api.AnnotationOperation] == "" || op == api.OperationForceReconcile {
		if err := r.annotate(ctx, api.KindInstallation, &cur.ObjectMeta, map[string]string{api.AnnotationOperation: op}); err != nil {
			return err
		}
		trace.Action(ctx, "subinstallation %s: operation %s", name, op)
	}
	return nil
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// triggerNested puts the operation annotation on the execution and every
// nested installation.
func (r *Reconciler) triggerNested(ctx context.Context, inst *api.Installation, op string) error {
	if e := r.caches.execution(inst); e != nil && !e.Deleting() {
		if err := r.annotate(ctx, api.KindExecution, &e.ObjectMeta, map[string]string{api.AnnotationOperation: op}); err != nil {
			return err
		}
	}
	for _, s := range r.caches.subinstallations(inst) {
		if !s.Deleting() {
			if err := r.annotate(ctx, api.KindInstallation, &s.ObjectMeta, map[string]string{api.AnnotationOperation: op}); err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteNested deletes the execution and the nested installations (deletion
// steps 1.2 and 7), first passing on op as the operation annotation and the
// installation's delete-without-uninstall annotation. It reports whether
// they are all gone already.
func (r *Reconciler) deleteNested(ctx context.Context, inst *api.Installation, op string) (bool, error) {
	set := map[string]string{}
	if op != "" {
		set[api.AnnotationOperation] = op
	}
	if inst.Annotations[api.AnnotationDeleteWithoutUninstall] == "true" {
		set[api.AnnotationDeleteWithoutUninstall] = "true"
	}
	type target struct {
		kind string
		meta *api.ObjectMeta
	}
	var targets []target
	if e := r.caches.execution(inst); e != nil {
		targets = append(targets, target{api.KindExecution, &e.ObjectMeta})
	}
	for _, s := range r.caches.subinstallations(inst) {
		targets = append(targets, target{api.KindInstallation, &s.ObjectMeta})
	}
	for _, t := range targets {
		if len(set) > 0 {
			if err := r.annotate(ctx, t.kind, t.meta, set); err != nil {
				return false, err
			}
		}
		if t.meta.Deleting() {
			continue
		}
		if _, _, err := r.c.Delete(ctx, t.kind, t.meta.Namespace, t.meta.Name, api.DeleteOptions{}); err != nil && !errors.Is(err, api.ErrNotFound) {
			return false, fmt.Errorf("delete %s %s: %w", t.kind, t.meta.Name, err)
		}
		r.forget(t.kind, t.meta.Namespace, t.meta.Name)
		trace.Action(ctx, "deleted %s %s", t.kind, t.meta.Name)
	}
	return len(targets) == 0, nil
}

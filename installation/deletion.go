package installation

import (
	"context"
	"errors"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/trace"
)

// deletion is the seed's deletion flow: it reads what each stretch of
// the flow decides over (DeletionChecks, DeletionPhase, DeletionUpdate),
// and carries the steps out. It blocks on the API; errors: the API's
// (retried).
func (r *Reconciler) deletion(ctx context.Context, inst *api.Installation) (controller.Result, error) {
	// 1. Check for force-reconcile operation annotation; 2. check for
	// sibling imports.
	st := DeletionChecks(DeletionStart{
		Finalizer:        inst.HasFinalizer(api.FinalizerInstallation),
		Force:            inst.Annotations[api.AnnotationOperation] == api.OperationForceReconcile,
		SiblingImporters: SiblingImporters(inst, mapValues(r.caches.siblings(inst))),
		WithoutUninstall: inst.Annotations[api.AnnotationDeleteWithoutUninstall] == "true",
	})
	switch st.Do {
	case DoForce:
		checks(ctx, st)
		return r.forceDeletion(ctx, inst)
	case DoPassOn:
		checks(ctx, st)
		if err := r.passOn(ctx, inst, map[string]string{api.AnnotationDeleteWithoutUninstall: "true"}); err != nil {
			return controller.Result{}, err
		}
	case DoGoOn:
		checks(ctx, st)
	default:
		return r.finish(ctx, inst, st)
	}
	// 3. Compute combined phase; 4. shortcut deletion for empty
	// installations; 5. evaluate combined phase.
	st = DeletionPhase(r.nested(inst))
	switch st.Do {
	case DoReadImports:
		checks(ctx, st)
		// 6. Check if an update is required.
		var err error
		if st, err = r.deletionUpdate(ctx, inst); err != nil {
			return controller.Result{}, err
		}
		if st.Do != DoDeleteNested {
			return r.finish(ctx, inst, st)
		}
	case DoDeleteNested:
	default:
		return r.finish(ctx, inst, st)
	}
	// 7. Delete nested installations and executions.
	checks(ctx, st)
	if _, err := r.deleteNested(ctx, inst, st.Op); err != nil {
		return controller.Result{}, err
	}
	return r.finish(ctx, inst, DeletionDeleted())
}

// deletionUpdate is deletion step 6: it resolves the imports, updates the
// nested objects when DeletionUpdate says so, and returns the step after
// (DeletionUpdated's, or one that ends the flow). It blocks on the API;
// errors: the API's, not failures (those are the step's).
func (r *Reconciler) deletionUpdate(ctx context.Context, inst *api.Installation) (Step, error) {
	imps, err := r.resolveImports(ctx, inst, 0)
	var f *failure
	if err != nil && !errors.As(err, &f) {
		return Step{}, err
	}
	failed := ""
	if f != nil {
		failed = f.err.Error()
	}
	bp := r.caches.blueprint(inst)
	st := DeletionUpdate(failed, UpdateRequired(inst, imps, bp.version), Unsatisfied(imps))
	if st.Do != DoUpdateNested {
		return st, nil
	}
	if _, _, err := r.update(ctx, inst, bp, imps, st.Op); err != nil {
		if !errors.As(err, &f) {
			return Step{}, err
		}
		return DeletionUpdated(f.err.Error()), nil
	}
	trace.Action(ctx, "%s", st.Did)
	return DeletionUpdated(""), nil
}

// forceDeletion is deletion step 1, the force-reconcile annotation: it
// skips the deletion checks. 1.1 updates the nested objects first
// (forceUpdate), 1.2 deletes them, passing the annotation on, and 1.3
// removes the annotation with the finalizer, once the nested objects are
// gone, not at once (see docs/departures.md). It blocks on the API;
// errors: the API's (retried).
func (r *Reconciler) forceDeletion(ctx context.Context, inst *api.Installation) (controller.Result, error) {
	st, err := r.forceUpdate(ctx, inst)
	if err != nil {
		return controller.Result{}, err
	}
	if st.Do != DoDeleteNested {
		return r.finish(ctx, inst, st)
	}
	checks(ctx, st)
	gone, err := r.deleteNested(ctx, inst, st.Op)
	if err != nil {
		return controller.Result{}, err
	}
	return r.finish(ctx, inst, ForceDeletionDeleted(gone))
}

// forceUpdate is deletion step 1.1: it updates the nested objects unless
// ForceDeletionStart skips it, and returns the step after
// (ForceDeletionUpdated's, or one that ends the flow). It blocks on the
// API; errors: the API's, not failures (those are the step's).
func (r *Reconciler) forceUpdate(ctx context.Context, inst *api.Installation) (Step, error) {
	st := ForceDeletionStart(r.nestedState(inst))
	if st.Do != DoReadImports {
		return st, nil
	}
	imps, err := r.resolveImports(ctx, inst, 0)
	if err == nil {
		if st = ForceDeletionImports(Unsatisfied(imps)); st.Do != DoUpdateNested {
			return st, nil
		}
		if _, _, err = r.update(ctx, inst, r.caches.blueprint(inst), imps, st.Op); err == nil {
			trace.Action(ctx, "%s", st.Did)
		}
	}
	var f *failure
	switch {
	case err == nil:
		return ForceDeletionUpdated("", ""), nil
	case errors.As(err, &f):
		return ForceDeletionUpdated(f.reason, f.err.Error()), nil
	}
	return Step{}, err
}

// nestedState reports whether the installation has nested objects and
// whether any of them is being deleted.
func (r *Reconciler) nestedState(inst *api.Installation) (exists, deleting bool) {
	if e := r.caches.execution(inst); e != nil {
		exists, deleting = true, e.Deleting()
	}
	for _, s := range r.caches.subinstallations(inst) {
		exists, deleting = true, deleting || s.Deleting()
	}
	return exists, deleting
}

// passOn sets annotations on the execution and the nested installations.
func (r *Reconciler) passOn(ctx context.Context, inst *api.Installation, set map[string]string) error {
	if e := r.caches.execution(inst); e != nil {
		if err := r.annotate(ctx, api.KindExecution, &e.ObjectMeta, set); err != nil {
			return err
		}
	}
	for _, s := range r.caches.subinstallations(inst) {
		if err := r.annotate(ctx, api.KindInstallation, &s.ObjectMeta, set); err != nil {
			return err
		}
	}
	return nil
}

package installation

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/trace"
)

// deletion is the seed's deletion flow.
func (r *Reconciler) deletion(ctx context.Context, inst *api.Installation) (controller.Result, error) {
	if !inst.HasFinalizer(api.FinalizerInstallation) {
		trace.Exit(ctx, "no finalizer of this controller left")
		return controller.Result{}, nil
	}
	// 1. Check for force-reconcile operation annotation.
	if inst.Annotations[api.AnnotationOperation] == api.OperationForceReconcile {
		return r.forceDeletion(ctx, inst)
	}
	// 2. Check for sibling imports.
	if users := SiblingImporters(inst, mapValues(r.caches.siblings(inst))); len(users) > 0 {
		msg := "deletion waits: " + strings.Join(users, "; ")
		err := r.setStatus(ctx, inst, func(s *api.InstallationStatus) {
			s.Phase = api.InstallationDeleting
			s.LastError = r.lastError(s.LastError, api.ReasonDeletionBlocked, msg)
		})
		trace.Exit(ctx, "2. %s", msg)
		return controller.Result{}, err
	}
	trace.Check(ctx, "2. no sibling imports an export")
	// The way out of a hanging deletion: pass delete-without-uninstall on
	// to whatever is nested, also when its deletion already failed.
	if inst.Annotations[api.AnnotationDeleteWithoutUninstall] == "true" {
		if err := r.passOn(ctx, inst, map[string]string{api.AnnotationDeleteWithoutUninstall: "true"}); err != nil {
			return controller.Result{}, err
		}
	}
	// 3. Compute combined phase.
	phase, why, ok := r.combined(inst)
	if !ok {
		trace.Exit(ctx, "the cache is behind this controller's writes to nested objects: waiting for their watch events")
		return controller.Result{RequeueAfter: expectFor}, nil
	}
	// 4. Shortcut deletion for empty installations.
	if phase == "" {
		trace.Action(ctx, "4. nothing nested left: finalizer removed")
		return controller.Result{}, r.updateMeta(ctx, inst, func(m *api.ObjectMeta) { m.RemoveFinalizer(api.FinalizerInstallation) })
	}
	trace.Check(ctx, "3. combined phase: %s %s", phase, describe(why))
	// 5. Evaluate combined phase.
	if !phase.Final() {
		err := r.setStatus(ctx, inst, func(s *api.InstallationStatus) { s.Phase = api.InstallationDeleting })
		trace.Exit(ctx, "5. Deleting: waits for %s", describe(why))
		return controller.Result{}, err
	}
	_, nestedDeleting := r.nestedState(inst)
	if nestedDeleting && phase == api.InstallationFailed {
		msg := "deletion failed: " + describe(why)
		err := r.setStatus(ctx, inst, func(s *api.InstallationStatus) {
			s.Phase = api.InstallationFailed
			s.LastError = r.lastError(s.LastError, api.ReasonDeletionFailed, msg)
		})
		trace.Exit(ctx, "5. %s (annotate %s: \"true\" to delete without uninstall)", msg, api.AnnotationDeleteWithoutUninstall)
		return controller.Result{}, err
	}
	// 6. Check if an update is required.
	if !nestedDeleting {
		imps, err := r.resolveImports(ctx, inst, 0)
		var f *failure
		if err != nil && !errors.As(err, &f) {
			return controller.Result{}, err
		}
		bp := r.caches.blueprint(inst)
		if f != nil {
			trace.Check(ctx, "6. cannot check for an update (%s); deleting what exists", f.err)
		} else if reason := UpdateRequired(inst, imps, bp.version); reason != "" {
			if bad := Unsatisfied(imps); len(bad) > 0 {
				trace.Exit(ctx, "6. update required (%s) but imports unsatisfied: %s", reason, strings.Join(bad, "; "))
				return controller.Result{}, r.setStatus(ctx, inst, func(s *api.InstallationStatus) {
					s.LastError = r.lastError(s.LastError, api.ReasonPendingDependencies, strings.Join(bad, "; "))
				})
			}
			if _, _, err := r.update(ctx, inst, bp, imps, ""); err != nil {
				var f *failure
				if !errors.As(err, &f) {
					return controller.Result{}, err
				}
				trace.Check(ctx, "6. update failed (%s); deleting what exists", f.err)
			} else {
				trace.Action(ctx, "6. update required (%s): nested objects updated", reason)
			}
		}
	}
	// 7. Delete nested installations and executions.
	if _, err := r.deleteNested(ctx, inst, ""); err != nil {
		return controller.Result{}, err
	}
	trace.Exit(ctx, "7. deleting the nested objects; waiting for them to go")
	return controller.Result{}, r.setStatus(ctx, inst, func(s *api.InstallationStatus) { s.Phase = api.InstallationDeleting })
}

// forceDeletion is deletion step 1, the force-reconcile annotation: it
// skips the deletion checks. 1.1 updates the nested objects first; when
// they cannot be rendered (a missing Blueprint, a template error, an
// import failing its schema) the deletion fails with that error, as the
// seed says, until the cause is fixed or the annotation removed (the
// standard deletion then deletes what exists). A right the creator lacks
// (reading an import, running a rendered command) never holds a deletion
// up: the update is skipped. 1.2 deletes the nested objects, passing the
// annotation on. 1.3: the annotation is removed with the finalizer, once
// the nested objects are gone, not at once (see docs/departures.md).
func (r *Reconciler) forceDeletion(ctx context.Context, inst *api.Installation) (controller.Result, error) {
	trace.Check(ctx, "1. force-reconcile annotation: skip the deletion checks")
	if err := r.updateBeforeDeletion(ctx, inst); err != nil {
		var f *failure
		if !errors.As(err, &f) {
			return controller.Result{}, err
		}
		msg := fmt.Sprintf("cannot update the nested objects before the deletion (%s: %s); fix it, or remove the %s annotation to delete without the update",
			f.reason, f.err, api.AnnotationOperation)
		trace.Exit(ctx, "1.1 deletion failed: %s", msg)
		return controller.Result{}, r.setStatus(ctx, inst, func(s *api.InstallationStatus) {
			s.Phase = api.InstallationFailed
			s.LastError = r.lastError(s.LastError, api.ReasonDeletionFailed, msg)
		})
	}
	gone, err := r.deleteNested(ctx, inst, api.OperationForceReconcile)
	if err != nil {
		return controller.Result{}, err
	}
	if gone {
		trace.Action(ctx, "1.2 nested objects gone: finalizer removed; 1.3 operation annotation removed")
		return controller.Result{}, r.updateMeta(ctx, inst, func(m *api.ObjectMeta) {
			m.RemoveFinalizer(api.FinalizerInstallation)
			delete(m.Annotations, api.AnnotationOperation)
		})
	}
	trace.Exit(ctx, "1.2 deleting the nested objects (force-reconcile propagated); waiting for them to go")
	return controller.Result{}, r.setStatus(ctx, inst, func(s *api.InstallationStatus) {
		s.Phase = api.InstallationDeleting
		if s.LastError != nil && s.LastError.Reason == api.ReasonDeletionFailed {
			s.LastError = nil
		}
	})
}

// updateBeforeDeletion is deletion step 1.1: it updates the nested
// objects unless they are already deleting or gone. It returns a failure
// when they cannot be rendered, an error when an import is unsatisfied
// (retried), and nil when the update was done or skipped: skipped when the
// creator lacks a right (a deletion never waits on one).
func (r *Reconciler) updateBeforeDeletion(ctx context.Context, inst *api.Installation) error {
	if exists, deleting := r.nestedState(inst); !exists || deleting {
		trace.Check(ctx, "1.1 nested objects already deleting or gone: no update")
		return nil
	}
	imps, err := r.resolveImports(ctx, inst, 0)
	if err == nil {
		if bad := Unsatisfied(imps); len(bad) > 0 {
			trace.Exit(ctx, "1.1 cannot update the nested objects: %s", strings.Join(bad, "; "))
			return fmt.Errorf("installation %s: cannot update before deletion: %s", inst.Name, strings.Join(bad, "; "))
		}
		_, _, err = r.update(ctx, inst, r.caches.blueprint(inst), imps, "")
	}
	var f *failure
	switch {
	case err == nil:
		trace.Action(ctx, "1.1 nested objects updated")
		return nil
	case errors.As(err, &f) && f.reason == api.ReasonCreatorForbidden:
		trace.Check(ctx, "1.1 cannot update the nested objects as the creator (%s); deleting what exists", f.err)
		return nil
	}
	return err
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

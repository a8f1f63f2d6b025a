package installation

import (
	"context"
	"fmt"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/trace"
)

// checks traces the checks a step passed on the way.
func checks(ctx context.Context, st Step) {
	for _, c := range st.Checks {
		trace.Check(ctx, "%s", c)
	}
}

// finish carries out a step that ends a flow (DoEnd, DoWait, DoRetry,
// DoSetStatus, DoRemoveFinalizer): it traces the step's checks, writes
// what the step says and traces how the flow ends. It blocks on the API;
// errors: the write's, or the step's own for DoRetry (both retried).
func (r *Reconciler) finish(ctx context.Context, inst *api.Installation, st Step) (controller.Result, error) {
	checks(ctx, st)
	switch st.Do {
	case DoEnd:
		trace.Exit(ctx, "%s", st.Exit)
		return controller.Result{}, nil
	case DoWait:
		trace.Exit(ctx, "%s", st.Exit)
		return controller.Result{RequeueAfter: expectFor}, nil
	case DoRetry:
		trace.Exit(ctx, "%s", st.Exit)
		return controller.Result{}, fmt.Errorf("installation %s: %s", inst.Name, st.Message)
	case DoRemoveFinalizer:
		err := r.updateMeta(ctx, inst, func(m *api.ObjectMeta) {
			m.RemoveFinalizer(api.FinalizerInstallation)
			if st.DropOperation {
				delete(m.Annotations, api.AnnotationOperation)
			}
		})
		if err == nil {
			trace.Action(ctx, "%s", st.Did)
		}
		return controller.Result{}, err
	case DoSetStatus:
		err := r.setStatus(ctx, inst, func(s *api.InstallationStatus) { r.applyStep(s, st) })
		trace.Exit(ctx, "%s", st.Exit)
		return controller.Result{}, err
	}
	return controller.Result{}, fmt.Errorf("installation %s: step %q does not end a flow", inst.Name, st.Do)
}

// applyStep writes a DoSetStatus step into s: its phase when set, its
// lastError when it has a reason, none when it clears a failed deletion.
func (r *Reconciler) applyStep(s *api.InstallationStatus, st Step) {
	if st.Phase != "" {
		s.Phase = st.Phase
	}
	if st.ClearDeletionFailed && s.LastError != nil && s.LastError.Reason == api.ReasonDeletionFailed {
		s.LastError = nil
	}
	if st.Reason != "" {
		s.LastError = r.lastError(s.LastError, st.Reason, st.Message)
	}
}

// nested reads the nested objects from the caches for the flows: their
// combined phase (standard step 1) and whether any exists or is being
// deleted; not Fresh when the caches are behind this controller's writes
// to them.
func (r *Reconciler) nested(inst *api.Installation) NestedView {
	var v NestedView
	var nested []Nested
	if e := r.caches.execution(inst); e != nil {
		if !r.fresh(api.KindExecution, e.Namespace, e.Name, e.ResourceVersion) {
			return NestedView{}
		}
		nested = append(nested, ExecutionState(e))
		v.Exists, v.Deleting = true, e.Deleting()
	} else if !r.fresh(api.KindExecution, inst.Namespace, inst.Name, "") {
		return NestedView{}
	}
	for _, s := range r.caches.subinstallations(inst) {
		if !r.fresh(api.KindInstallation, s.Namespace, s.Name, s.ResourceVersion) {
			return NestedView{}
		}
		nested = append(nested, InstallationState(s))
		v.Exists, v.Deleting = true, v.Deleting || s.Deleting()
	}
	for _, ref := range inst.Status.Subinstallations {
		if !r.fresh(api.KindInstallation, inst.Namespace, ref.Ref, "") {
			return NestedView{}
		}
	}
	v.Phase, v.Why = Combined(nested)
	v.Fresh = true
	return v
}

package installation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/trace"
)

// Reconciler reconciles one installation per call. Build it with New (or
// Setup); its Reconcile is safe for concurrent use on different keys.
type Reconciler struct {
	c      client.Interface
	caches caches
	log    *slog.Logger
	now    func() time.Time

	// expect holds, by "Kind/ns/name", the resourceVersion this
	// controller last wrote: the caches are not trusted for an object
	// until they hold that version (or a newer one), so a reconcile never
	// acts on a state older than its own last write. A reconcile that
	// finds a cache behind ends and waits for the watch event of that
	// write, which reconciles the installation again (its own event, or
	// that of a nested object through its owner), rather than polling; it
	// looks again once the expectation has expired (expectFor) only in
	// case no event comes: an object deleted by someone else meanwhile.
	expect controller.Written
}

// failure is an outcome that makes the installation Failed with a
// lastError instead of retrying: a bad blueprint, a template error, an
// import failing its schema. Only a change of an object fixes it.
type failure struct {
	reason api.ErrorReason
	err    error
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

func fail(reason api.ErrorReason, err error) error { return &failure{reason: reason, err: err} }

// forbidden turns a refusal of what the installation would do for its
// creator (api.IsCreatorForbidden) into a failure; other errors stay as
// they are (retried).
func forbidden(err error) error {
	if api.IsCreatorForbidden(err) {
		return fail(api.ReasonCreatorForbidden, err)
	}
	return err
}

// Reconcile is the seed's core reconciliation logic (steps 1 to 6): it
// reads the installation from the cache and runs the flow Core decides.
// It is level-based: it acts only on the current state.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, _ := strings.Cut(key, "/")
	obj, ok := r.caches.insts.Get(ns, name)
	if !ok {
		r.forget(api.KindInstallation, ns, name)
		return controller.Result{}, nil
	}
	trace.Object(ctx, api.KindInstallation, ns, name)
	inst, err := controller.Decode[*api.Installation](obj)
	if err != nil {
		// Only a change of the object fixes it, and that change
		// reconciles it again.
		return controller.Result{}, controller.Terminal(fmt.Errorf("installation: %w", err))
	}
	if !r.fresh(api.KindInstallation, ns, name, inst.ResourceVersion) {
		trace.Exit(ctx, "the cache is behind this controller's last write: waiting for its watch event")
		return controller.Result{RequeueAfter: expectFor}, nil
	}
	res, err := r.run(ctx, inst)
	return res, r.refused(ctx, inst, err)
}

// refused records in the installation's lastError that the API refused a
// write this reconcile needed (api.WriteRefused: a namespace at its object
// limit, an object too large, a full store), with the API's reason and
// message, and returns err: the reconcile is retried with backoff, as what
// fixes it sends the installation no event. Other errors are returned as
// they are.
func (r *Reconciler) refused(ctx context.Context, inst *api.Installation, err error) error {
	if !api.WriteRefused(err) {
		return err
	}
	msg := fmt.Sprintf("the API refused a write (%s): %v", api.ReasonOf(err), err)
	if werr := r.setStatus(ctx, inst, func(s *api.InstallationStatus) {
		s.LastError = r.lastError(s.LastError, api.ReasonWriteRefused, msg)
	}); werr != nil {
		r.log.Warn("installation: cannot record a refused write", "installation", inst.Namespace+"/"+inst.Name, "err", werr)
	}
	trace.Exit(ctx, "%s: %s (retried with backoff)", api.ReasonWriteRefused, msg)
	return err
}

// run runs the flow Core decides for inst.
func (r *Reconciler) run(ctx context.Context, inst *api.Installation) (controller.Result, error) {
	flow := Core(inst)
	switch flow {
	case FlowIgnore:
		trace.Exit(ctx, "1. ignore annotation on a %s installation: nothing to do", inst.Status.Phase)
		return controller.Result{}, nil
	case FlowAddFinalizer:
		trace.Check(ctx, "2. no finalizer and not deleting")
		if err := r.updateMeta(ctx, inst, func(m *api.ObjectMeta) { m.AddFinalizer(api.FinalizerInstallation) }); err != nil {
			return controller.Result{}, err
		}
		trace.Exit(ctx, "2. added finalizer %s; the change reconciles again", api.FinalizerInstallation)
		return controller.Result{}, nil
	case FlowDelete:
		trace.Subflow(ctx, "3. deletion timestamp set: deletion flow")
		return r.deletion(ctx, inst)
	case FlowForce:
		trace.Subflow(ctx, "4. operation %s: force reconcile", api.OperationForceReconcile)
		return r.force(ctx, inst)
	case FlowNestedCheck:
		trace.Check(ctx, "5. %s and generation %d observed: checking nested changes", inst.Status.Phase, inst.Generation)
		return r.nestedCheck(ctx, inst)
	}
	if op := inst.Annotations[api.AnnotationOperation]; op != "" {
		trace.Subflow(ctx, "4. operation %s: standard reconcile", op)
	} else {
		trace.Subflow(ctx, "6. standard reconcile (phase %s, generation %d, observed %d)",
			orNone(string(inst.Status.Phase)), inst.Generation, inst.Status.ObservedGeneration)
	}
	return r.standard(ctx, inst)
}

func describe(n *Nested) string {
	if n == nil {
		return ""
	}
	s := strings.ToLower(n.Kind) + " " + n.Name + " is " + string(n.Phase)
	if n.Reason != "" {
		s += ": " + n.Reason
	}
	return s
}

// standard is the seed's standard reconciliation: it reads what each
// stretch of the flow decides over (StandardPhase, StandardUpdate,
// StandardDependencies) and carries the steps out. It blocks on the API;
// errors: the API's (retried).
func (r *Reconciler) standard(ctx context.Context, inst *api.Installation) (controller.Result, error) {
	// 1. Compute combined phase; 2. evaluate it; 3. check for abort
	// operation annotation.
	st := StandardPhase(r.nested(inst), inst.Annotations[api.AnnotationOperation] == api.OperationAbort)
	switch st.Do {
	case DoAbort:
		checks(ctx, st)
		err := r.setStatus(ctx, inst, func(s *api.InstallationStatus) { s.Phase = st.Phase })
		if err == nil {
			err = r.dropOperation(ctx, inst)
		}
		trace.Exit(ctx, "%s", st.Exit)
		return controller.Result{}, err
	case DoReadImports:
		checks(ctx, st)
	default:
		return r.finish(ctx, inst, st)
	}
	// 4. Check if an update is required.
	imps, err := r.resolveImports(ctx, inst, 0)
	if err != nil {
		return r.failed(ctx, inst, err, r.caches.blueprint(inst), nil)
	}
	bp := r.caches.blueprint(inst)
	st = StandardUpdate(StandardView{Required: UpdateRequired(inst, imps, bp.version), Phase: st.Phase, Why: st.Why,
		Status: inst.Status.Phase, Operation: inst.Annotations[api.AnnotationOperation]})
	checks(ctx, st)
	switch st.Do {
	case DoCheckDependencies:
		// 4.1 Check if updating is possible. (The phase passes through
		// PendingDependencies; it is written only when it stays there.)
		st = StandardDependencies(Blockers(r.caches.parent(inst), r.caches.siblings(inst), imps), inst.Status.Phase)
		if st.Do != DoUpdateNested {
			return r.finish(ctx, inst, st)
		}
		checks(ctx, st)
		return r.updateAndProgress(ctx, inst, bp, imps, st.Op, "4.1")
	case DoRecheckNested:
		return r.recheckNested(ctx, inst, st)
	}
	// 5. Export generation; 6. trigger depending installations (for
	// a Succeeded combined phase); the final phase.
	if st.Phase == api.InstallationSucceeded {
		if err := r.exportAndTrigger(ctx, inst, bp, imps); err != nil {
			return r.failed(ctx, inst, err, bp, imps)
		}
	}
	if err := r.dropOperation(ctx, inst); err != nil {
		return controller.Result{}, err
	}
	err = r.setFinal(ctx, inst, st.Phase, st.Why)
	trace.Exit(ctx, "%s", st.Exit)
	return r.automatic(ctx, inst, err)
}

// recheckNested carries out DoRecheckNested: an explicit reconcile of an
// up-to-date, succeeded installation re-checks the whole tree (drift
// repair): the nested objects get the reconcile annotation, the
// installation's goes and it is Progressing. It blocks on the API;
// errors: the API's (retried).
func (r *Reconciler) recheckNested(ctx context.Context, inst *api.Installation, st Step) (controller.Result, error) {
	if err := r.triggerNested(ctx, inst, api.OperationReconcile); err != nil {
		return controller.Result{}, err
	}
	trace.Action(ctx, "%s", st.Did)
	if err := r.dropOperation(ctx, inst); err != nil {
		return controller.Result{}, err
	}
	return controller.Result{}, r.setStatus(ctx, inst, func(s *api.InstallationStatus) {
		s.Phase = st.Phase
		r.markReconciled(s)
	})
}

// updateAndProgress updates the nested objects (✔️) and records it:
// Progressing, the generation, the import generations and the blueprint's
// version observed.
func (r *Reconciler) updateAndProgress(ctx context.Context, inst *api.Installation, bp source, imps []Import, op, step string) (controller.Result, error) {
	execRef, subs, err := r.update(ctx, inst, bp, imps, op)
	if err != nil {
		return r.failed(ctx, inst, err, bp, imps)
	}
	trace.Action(ctx, "%s updated the nested objects: execution %q, %d subinstallation(s)", step, execRef, len(subs))
	if err := r.dropOperation(ctx, inst); err != nil {
		return controller.Result{}, err
	}
	err = r.setStatus(ctx, inst, func(s *api.InstallationStatus) {
		s.Phase = api.InstallationProgressing
		s.ObservedGeneration = inst.Generation
		s.ImportGenerations = Generations(imps)
		s.BlueprintGeneration = bp.version
		s.ExecutionRef = execRef
		s.Subinstallations = subs
		s.LastError = nil
		r.markReconciled(s)
	})
	trace.Exit(ctx, "Progressing: the nested objects run")
	return controller.Result{}, err
}

// force is the seed's force reconciliation.
func (r *Reconciler) force(ctx context.Context, inst *api.Installation) (controller.Result, error) {
	imps, err := r.resolveImports(ctx, inst, 0)
	if err != nil {
		return r.failed(ctx, inst, err, r.caches.blueprint(inst), nil)
	}
	// 1. Check if imports are satisfied.
	if bad := Unsatisfied(imps); len(bad) > 0 {
		msg := strings.Join(bad, "; ")
		err := r.setStatus(ctx, inst, func(s *api.InstallationStatus) {
			s.Phase = api.InstallationPendingDependencies
			s.LastError = r.lastError(s.LastError, api.ReasonPendingDependencies, msg)
		})
		trace.Exit(ctx, "1. PendingDependencies: %s", msg)
		return controller.Result{}, err
	}
	trace.Check(ctx, "1. every import is satisfied")
	// 2. Update nested installations and executions; 3. remove the
	// operation annotation; 4. set phase Progressing.
	return r.updateAndProgress(ctx, inst, r.caches.blueprint(inst), imps, api.OperationForceReconcile, "2.")
}

// nestedCheck is core step 5: a final, unmodified installation follows
// the phase of its nested objects; when it becomes Succeeded it publishes
// its exports and triggers its dependents. Then the automatic reconcile
// decides whether it runs again by itself. Before that, cairn adds one
// check: an installation whose inputs changed since it last rendered (an
// import, or its Blueprint edited) gets the reconcile annotation, which
// runs it through the standard flow.
func (r *Reconciler) nestedCheck(ctx context.Context, inst *api.Installation) (controller.Result, error) {
	n := r.nested(inst)
	if !n.Fresh {
		trace.Exit(ctx, waitNested)
		return controller.Result{RequeueAfter: expectFor}, nil
	}
	phase, why := n.Phase, n.Why
	if phase == "" {
		phase = api.InstallationSucceeded
	}
	imps, err := r.resolveImports(ctx, inst, 0)
	if err != nil {
		return r.failed(ctx, inst, err, r.caches.blueprint(inst), nil)
	}
	bp := r.caches.blueprint(inst)
	if changed := InputsChanged(inst, imps, bp.version); changed != "" {
		err := r.setOperation(ctx, inst, api.OperationReconcile)
		trace.Exit(ctx, "5. %s: reconcile annotation added", changed)
		return controller.Result{}, err
	}
	if ownFailure(inst) {
		if inst.Status.LastError.Reason == api.ReasonBlueprintNotFound {
			if bp.err == nil {
				// The blueprint it missed exists now (created later, or
				// seen by the cache after the installation): run again.
				err := r.setOperation(ctx, inst, api.OperationReconcile)
				trace.Exit(ctx, "5. Failed for want of Blueprint %s, which exists now: reconcile annotation added", inst.Spec.Blueprint.Ref)
				return controller.Result{}, err
			}
		}
		trace.Exit(ctx, "5. Failed by its own error (%s): waits for a change or a reconcile", inst.Status.LastError.Reason)
		return r.automatic(ctx, inst, nil)
	}
	if phase == inst.Status.Phase || (inst.Status.Phase == api.InstallationAborted && phase.Final()) {
		trace.Exit(ctx, "5. nested objects unchanged (%s)", phase)
		return r.automatic(ctx, inst, nil)
	}
	trace.Check(ctx, "5. nested phase changed: %s → %s %s", inst.Status.Phase, phase, describe(why))
	if !phase.Final() {
		err := r.setStatus(ctx, inst, func(s *api.InstallationStatus) { s.Phase = api.InstallationProgressing })
		trace.Exit(ctx, "5. Progressing: waits for %s", describe(why))
		return controller.Result{}, err
	}
	if phase == api.InstallationSucceeded {
		if err := r.exportAndTrigger(ctx, inst, bp, imps); err != nil {
			return r.failed(ctx, inst, err, bp, imps)
		}
	}
	err = r.setFinal(ctx, inst, phase, why)
	trace.Exit(ctx, "5. %s", phase)
	return r.automatic(ctx, inst, err)
}

// setFinal records a final phase: Failed with the nested reason, or a
// success that resets the retry count.
func (r *Reconciler) setFinal(ctx context.Context, inst *api.Installation, phase api.InstallationPhase, why *Nested) error {
	return r.setStatus(ctx, inst, func(s *api.InstallationStatus) {
		s.Phase = phase
		switch phase {
		case api.InstallationFailed:
			s.LastError = r.lastError(s.LastError, api.ReasonNestedFailed, describe(why))
		case api.InstallationSucceeded:
			s.LastError = nil
			resetRetries(s)
		}
	})
}

// automatic is the automatic reconcile of a root installation in a final
// phase: a failed one is retried with backoff, a succeeded one reconciled
// every interval, by adding the reconcile annotation.
func (r *Reconciler) automatic(ctx context.Context, inst *api.Installation, err error) (controller.Result, error) {
	if err != nil {
		return controller.Result{}, err
	}
	cur := inst // kept current by this reconcile's own writes
	if !cur.Status.Phase.Final() {
		return controller.Result{}, nil
	}
	last := cur.CreationTimestamp
	if le := cur.Status.LastError; le != nil && !le.Time.IsZero() && cur.Status.Phase == api.InstallationFailed {
		last = le.Time
	}
	d := AutomaticReconcile(cur, contextOf(&cur.ObjectMeta) != "", last, r.now())
	switch {
	case d.Now:
		if err := r.setStatus(ctx, cur, func(s *api.InstallationStatus) {
			if s.AutomaticReconcile == nil {
				s.AutomaticReconcile = &api.AutomaticReconcileStatus{}
			}
			if d.Failed {
				s.AutomaticReconcile.FailedRetries++
			}
			s.AutomaticReconcile.LastRetry = r.now().UTC()
		}); err != nil {
			return controller.Result{}, err
		}
		if err := r.setOperation(ctx, cur, api.OperationReconcile); err != nil {
			return controller.Result{}, err
		}
		trace.Action(ctx, "automaticReconcile: reconcile annotation added (%s)", map[bool]string{true: "retry of a failure", false: "periodic"}[d.Failed])
	case d.After > 0:
		trace.Check(ctx, "automaticReconcile: next in %s", d.After.Round(time.Second))
		return controller.Result{RequeueAfter: d.After}, nil
	}
	return controller.Result{}, nil
}

// failed turns a failure into the Failed phase with lastError, recording
// the inputs it failed with (imps, bp), so that a change of one of them
// runs it again (core step 5); other errors are returned for a retry.
func (r *Reconciler) failed(ctx context.Context, inst *api.Installation, err error, bp source, imps []Import) (controller.Result, error) {
	var f *failure
	if !errors.As(err, &f) {
		return controller.Result{}, err
	}
	trace.Exit(ctx, "Failed (%s): %s", f.reason, f.err)
	if werr := r.setStatus(ctx, inst, func(s *api.InstallationStatus) {
		s.Phase = api.InstallationFailed
		s.ObservedGeneration = inst.Generation
		s.ImportGenerations = Generations(imps)
		s.BlueprintGeneration = bp.version
		s.LastError = r.lastError(s.LastError, f.reason, f.err.Error())
	}); werr != nil {
		return controller.Result{}, werr
	}
	if werr := r.dropOperation(ctx, inst); werr != nil {
		return controller.Result{}, werr
	}
	return r.automatic(ctx, inst, nil)
}

func (r *Reconciler) lastError(old *api.LastError, reason api.ErrorReason, msg string) *api.LastError {
	if old != nil && old.Reason == reason && old.Message == msg {
		return old
	}
	return &api.LastError{Reason: reason, Message: msg, Time: r.now().UTC()}
}

// resetRetries forgets the failed retries after a success, keeping when
// the last automatic reconcile was (the base of the periodic one).
func resetRetries(s *api.InstallationStatus) {
	if s.AutomaticReconcile == nil {
		return
	}
	s.AutomaticReconcile.FailedRetries = 0
	if s.AutomaticReconcile.LastRetry.IsZero() {
		s.AutomaticReconcile = nil
	}
}

func (r *Reconciler) markReconciled(s *api.InstallationStatus) {
	if s.AutomaticReconcile != nil {
		s.AutomaticReconcile.LastRetry = r.now().UTC()
	}
}

// ownFailure reports whether a Failed installation failed by its own
// error (its blueprint, templates or imports) rather than a nested one:
// the nested objects then say nothing about it.
func ownFailure(inst *api.Installation) bool {
	if inst.Status.Phase != api.InstallationFailed || inst.Status.LastError == nil {
		return false
	}
	switch inst.Status.LastError.Reason {
	case api.ReasonBlueprintNotFound, api.ReasonImportInvalid, api.ReasonRenderFailed, api.ReasonCreatorForbidden:
		return true
	}
	return false
}

func mapValues(m map[string]*api.Installation) []*api.Installation {
	out := make([]*api.Installation, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

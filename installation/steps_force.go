package installation

import (
	"fmt"
	"strings"

	"cairn.dev/cairn/api"
)

// The force-reconcile stretch of the deletion flow (deletion step 1) and
// the standard flow, decided over plain data like steps.go's.

// forceDeleting is deletion step 1.2: delete the nested objects, passing
// the force-reconcile annotation on.
func forceDeleting(checks ...string) Step {
	return Step{Do: DoDeleteNested, Op: api.OperationForceReconcile, Checks: checks}
}

// ForceDeletionStart is deletion step 1.1's first check: nested objects
// already deleting, or none, are not updated (1.2 deletes them);
// otherwise the imports are resolved for the update.
func ForceDeletionStart(exists, deleting bool) Step {
	if !exists || deleting {
		return forceDeleting("1.1 nested objects already deleting or gone: no update")
	}
	return Step{Do: DoReadImports}
}

// ForceDeletionImports is deletion step 1.1 over the resolved imports'
// unsatisfied ones: the update waits for them (retried), or runs.
func ForceDeletionImports(unsatisfied []string) Step {
	if len(unsatisfied) > 0 {
		msg := strings.Join(unsatisfied, "; ")
		return Step{Do: DoRetry, Message: "cannot update before deletion: " + msg, Exit: "1.1 cannot update the nested objects: " + msg}
	}
	return Step{Do: DoUpdateNested, Did: "1.1 nested objects updated"}
}

// ForceDeletionUpdated is deletion step 1.1's outcome, from the failure
// (reason and message: "" when none) that resolving the imports or the
// update met: none, or a right the creator lacks (a deletion never waits
// on one), goes on to 1.2; any other (a missing Blueprint, a template
// error, an import failing its schema) fails the deletion until the cause
// is fixed or the annotation removed.
func ForceDeletionUpdated(reason api.ErrorReason, failed string) Step {
	switch reason {
	case "":
		return forceDeleting()
	case api.ReasonCreatorForbidden:
		return forceDeleting(fmt.Sprintf("1.1 cannot update the nested objects as the creator (%s); deleting what exists", failed))
	}
	msg := fmt.Sprintf("cannot update the nested objects before the deletion (%s: %s); fix it, or remove the %s annotation to delete without the update",
		reason, failed, api.AnnotationOperation)
	return Step{Do: DoSetStatus, Phase: api.InstallationFailed, Reason: api.ReasonDeletionFailed, Message: msg, Exit: "1.1 deletion failed: " + msg}
}

// ForceDeletionDeleted is deletion steps 1.2 and 1.3 once the nested
// objects are asked to go: gone, the finalizer and the operation
// annotation go (the annotation not before: see docs/departures.md);
// else Deleting, forgetting an earlier failed deletion.
func ForceDeletionDeleted(gone bool) Step {
	if gone {
		return Step{Do: DoRemoveFinalizer, DropOperation: true, Did: "1.2 nested objects gone: finalizer removed; 1.3 operation annotation removed"}
	}
	return Step{Do: DoSetStatus, Phase: api.InstallationDeleting, ClearDeletionFailed: true,
		Exit: "1.2 deleting the nested objects (force-reconcile propagated); waiting for them to go"}
}

// StandardPhase is standard steps 1 to 3: the combined phase of the
// nested objects (waiting for a cache behind), Succeeded when nothing is
// nested, Progressing while a nested object is not final, Aborted for the
// abort annotation; else step 4 decides, over the imports, with the
// combined phase in Phase and Why.
func StandardPhase(n NestedView, abort bool) Step {
	if !n.Fresh {
		return Step{Do: DoWait, Exit: waitNested}
	}
	checks := []string{fmt.Sprintf("1. combined phase of the nested objects: %s %s", orNone(string(n.Phase)), describe(n.Why))}
	phase := n.Phase
	if phase == "" {
		phase = api.InstallationSucceeded
		checks = append(checks, "2. nothing nested: Succeeded by default")
	} else if !phase.Final() {
		return Step{Do: DoSetStatus, Checks: checks, Phase: api.InstallationProgressing, Exit: "2. Progressing: waits for " + describe(n.Why)}
	}
	if abort {
		return Step{Do: DoAbort, Checks: checks, Phase: api.InstallationAborted, Exit: "3. abort annotation: Aborted"}
	}
	return Step{Do: DoReadImports, Checks: checks, Phase: phase, Why: n.Why}
}

// StandardView is what standard step 4 decides over.
type StandardView struct {
	// Required is UpdateRequired's reason ("" when no update is required).
	Required string
	// Phase is the combined phase (final), Why the nested object that
	// decided it.
	Phase api.InstallationPhase
	Why   *Nested
	// Status is the installation's phase, Operation its operation
	// annotation.
	Status    api.InstallationPhase
	Operation string
}

// StandardUpdate is standard step 4: an update required goes to 4.1; an
// explicit reconcile of an up-to-date, succeeded installation re-checks
// the whole tree (drift repair); otherwise steps 5 and 6 and the final
// phase.
func StandardUpdate(v StandardView) Step {
	if v.Required != "" {
		return Step{Do: DoCheckDependencies, Checks: []string{"4. update required: " + v.Required}}
	}
	checks := []string{"4. no update required"}
	if v.Phase == api.InstallationSucceeded && v.Operation == api.OperationReconcile && v.Status == api.InstallationSucceeded {
		return Step{Do: DoRecheckNested, Checks: checks, Phase: api.InstallationProgressing,
			Did: "4. reconcile asked with nothing changed: nested objects re-checked"}
	}
	return Step{Do: DoFinish, Checks: checks, Phase: v.Phase, Why: v.Why, Exit: string(v.Phase)}
}

// StandardDependencies is standard step 4.1 over the blockers: the
// installation stays PendingDependencies while there are any (the phase
// is written only then), else the nested objects are updated; a Failed
// or Aborted installation passes force-reconcile on, so that its failed
// deploy items run again.
func StandardDependencies(blockers []Blocker, status api.InstallationPhase) Step {
	if len(blockers) > 0 {
		return Step{Do: DoSetStatus, Phase: api.InstallationPendingDependencies, Reason: api.ReasonPendingDependencies,
			Message: JoinBlockers(blockers, false), Exit: "4.1 PendingDependencies: " + JoinBlockers(blockers, true)}
	}
	st := Step{Do: DoUpdateNested, Checks: []string{"4.1 every dependency is satisfied"}}
	if status == api.InstallationFailed || status == api.InstallationAborted {
		st.Op = api.OperationForceReconcile
	}
	return st
}

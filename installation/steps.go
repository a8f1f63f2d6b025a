package installation

import (
	"fmt"
	"strings"

	"cairn.dev/cairn/api"
)

// The steps of the standard and deletion flows, decided over plain data.
// Each function below decides one stretch of the seed's flow, from the
// facts read before it, and returns the Step to take; the reconciler
// (reconciler.go, deletion.go) only reads the facts, calls these, and
// carries the step out: a step that ends the flow through finish, the
// others by reading the facts the next stretch decides over.

// Action is what a Step does.
type Action string

// The actions of the flows.
const (
	// DoEnd: nothing to write; the flow ends (Step.Exit says why).
	DoEnd Action = "end"
	// DoWait: the caches are behind this controller's writes to the
	// nested objects; the flow ends and runs again on their watch events.
	DoWait Action = "wait"
	// DoSetStatus: write Step.Phase (when set) and a lastError (when
	// Step.Reason is set); the flow ends.
	DoSetStatus Action = "set-status"
	// DoRemoveFinalizer: remove this controller's finalizer (and, with
	// Step.DropOperation, the operation annotation); the flow ends.
	DoRemoveFinalizer Action = "remove-finalizer"
	// DoRetry: the flow ends with an error (Step.Exit): retried with
	// backoff.
	DoRetry Action = "retry"
	// DoGoOn: nothing to do in this stretch; the next one decides.
	DoGoOn Action = "go-on"
	// DoPassOn: pass delete-without-uninstall on to the nested objects,
	// then go on.
	DoPassOn Action = "pass-on"
	// DoForce: the deletion's force-reconcile stretch decides (deletion
	// step 1).
	DoForce Action = "force"
	// DoReadImports: the imports are needed to decide (resolved next).
	DoReadImports Action = "read-imports"
	// DoCheckDependencies: an update is required; standard step 4.1
	// decides whether it can happen now.
	DoCheckDependencies Action = "check-dependencies"
	// DoUpdateNested: update the nested installations and execution,
	// passing Step.Op on.
	DoUpdateNested Action = "update-nested"
	// DoDeleteNested: delete the nested installations and execution,
	// passing Step.Op on; the flow's next stretch decides from whether
	// they are gone.
	DoDeleteNested Action = "delete-nested"
	// DoAbort: write Aborted and drop the operation annotation (standard
	// step 3); the flow ends.
	DoAbort Action = "abort"
	// DoRecheckNested: nothing changed but a reconcile was asked of a
	// succeeded installation: the nested objects get the reconcile
	// annotation, the installation becomes Progressing.
	DoRecheckNested Action = "recheck-nested"
	// DoFinish: standard steps 5 and 6 for a Succeeded combined phase
	// (export, trigger dependents), then the operation annotation goes
	// and Step.Phase is written as the final phase.
	DoFinish Action = "finish"
)

// Step is what a flow does next.
type Step struct {
	Do Action
	// Checks are the trace's checks passed on the way to this step, in
	// the seed's words and numbers.
	Checks []string
	// Phase is the phase a step writes ("" keeps it); for DoReadImports
	// out of StandardPhase, the combined phase step 4 goes on with.
	Phase api.InstallationPhase
	// Reason and Message are the lastError a DoSetStatus writes (Reason
	// "": lastError stays as it is).
	Reason  api.ErrorReason
	Message string
	// ClearDeletionFailed: a DoSetStatus removes a lastError of a failed
	// deletion.
	ClearDeletionFailed bool
	// Op is the operation annotation an update or a deletion passes on.
	Op string
	// DropOperation: a DoRemoveFinalizer removes the operation
	// annotation too.
	DropOperation bool
	// Why is the nested object that decided the combined phase.
	Why *Nested
	// Did is the trace's action once the step was carried out; Exit the
	// trace's line that ends the flow with it.
	Did, Exit string
}

// waitNested is the exit of a flow whose caches are behind.
const waitNested = "the cache is behind this controller's writes to nested objects: waiting for their watch events"

// NestedView is what the caches say of an installation's nested objects.
type NestedView struct {
	// Fresh: the caches hold at least this controller's last writes to
	// them (otherwise nothing else here is filled in).
	Fresh bool
	// Phase is the combined phase ("" when nothing is nested) and Why the
	// nested object that decided it.
	Phase api.InstallationPhase
	Why   *Nested
	// Exists: something is nested; Deleting: a nested object is being
	// deleted.
	Exists, Deleting bool
}

// DeletionStart is what deletion steps 1 and 2 decide over.
type DeletionStart struct {
	// Finalizer: the installation still has this controller's finalizer.
	Finalizer bool
	// Force: the force-reconcile annotation (step 1).
	Force bool
	// SiblingImporters are the live siblings importing an export (step 2).
	SiblingImporters []string
	// WithoutUninstall: the delete-without-uninstall annotation, passed
	// on to whatever is nested (the way out of a hanging deletion).
	WithoutUninstall bool
}

// DeletionChecks is deletion steps 1 and 2: nothing left to do without
// the finalizer; the force stretch for the force-reconcile annotation; a
// deletion blocked while a sibling imports an export; else on, passing
// delete-without-uninstall on first when it is asked.
func DeletionChecks(d DeletionStart) Step {
	switch {
	case !d.Finalizer:
		return Step{Do: DoEnd, Exit: "no finalizer of this controller left"}
	case d.Force:
		return Step{Do: DoForce, Checks: []string{"1. force-reconcile annotation: skip the deletion checks"}}
	case len(d.SiblingImporters) > 0:
		msg := "deletion waits: " + strings.Join(d.SiblingImporters, "; ")
		return Step{Do: DoSetStatus, Phase: api.InstallationDeleting, Reason: api.ReasonDeletionBlocked, Message: msg, Exit: "2. " + msg}
	}
	s := Step{Do: DoGoOn, Checks: []string{"2. no sibling imports an export"}}
	if d.WithoutUninstall {
		s.Do = DoPassOn
	}
	return s
}

// deleting is deletion step 7: delete the nested objects.
func deleting(checks ...string) Step {
	return Step{Do: DoDeleteNested, Checks: checks}
}

// DeletionPhase is deletion steps 3 to 5 over the nested objects: wait
// for a cache behind; nothing nested, the finalizer goes; not final,
// Deleting; a failed deletion of a nested object fails this one; nested
// objects already deleting skip the update check (step 6) and go on
// deleting (step 7); else step 6 decides.
func DeletionPhase(n NestedView) Step {
	switch {
	case !n.Fresh:
		return Step{Do: DoWait, Exit: waitNested}
	case n.Phase == "":
		return Step{Do: DoRemoveFinalizer, Did: "4. nothing nested left: finalizer removed"}
	}
	check := fmt.Sprintf("3. combined phase: %s %s", n.Phase, describe(n.Why))
	switch {
	case !n.Phase.Final():
		return Step{Do: DoSetStatus, Checks: []string{check}, Phase: api.InstallationDeleting, Exit: "5. Deleting: waits for " + describe(n.Why)}
	case n.Deleting && n.Phase == api.InstallationFailed:
		msg := "deletion failed: " + describe(n.Why)
		return Step{Do: DoSetStatus, Checks: []string{check}, Phase: api.InstallationFailed, Reason: api.ReasonDeletionFailed, Message: msg,
			Exit: fmt.Sprintf("5. %s (annotate %s: \"true\" to delete without uninstall)", msg, api.AnnotationDeleteWithoutUninstall)}
	case n.Deleting:
		return deleting(check)
	}
	return Step{Do: DoReadImports, Checks: []string{check}}
}

// DeletionUpdate is deletion step 6 over the resolved imports: failed is
// why they could not be resolved (a failure, not retried: "" when they
// were), required is UpdateRequired's reason and unsatisfied
// Unsatisfied's. An update that cannot be checked is skipped; one that is
// required waits for unsatisfied imports, else the nested objects are
// updated; then step 7.
func DeletionUpdate(failed, required string, unsatisfied []string) Step {
	switch {
	case failed != "":
		return deleting(fmt.Sprintf("6. cannot check for an update (%s); deleting what exists", failed))
	case required == "":
		return deleting()
	case len(unsatisfied) > 0:
		msg := strings.Join(unsatisfied, "; ")
		return Step{Do: DoSetStatus, Reason: api.ReasonPendingDependencies, Message: msg,
			Exit: fmt.Sprintf("6. update required (%s) but imports unsatisfied: %s", required, msg)}
	}
	return Step{Do: DoUpdateNested, Did: fmt.Sprintf("6. update required (%s): nested objects updated", required)}
}

// DeletionUpdated is deletion step 6 after the update (failed: why it
// failed, "" when it did not): a failed update does not hold the deletion
// up; step 7 deletes what exists.
func DeletionUpdated(failed string) Step {
	if failed != "" {
		return deleting(fmt.Sprintf("6. update failed (%s); deleting what exists", failed))
	}
	return deleting()
}

// DeletionDeleted is deletion step 7 once the nested objects are asked to
// go: Deleting until they are gone (the finalizer goes by step 4 then).
func DeletionDeleted() Step {
	return Step{Do: DoSetStatus, Phase: api.InstallationDeleting, Exit: "7. deleting the nested objects; waiting for them to go"}
}

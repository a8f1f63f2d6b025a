package installation

import (
	"reflect"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
)

// stepWant is what a table row expects of a Step: its action, the phase
// and lastError reason it writes, the operation it passes on, and words
// its trace lines (checks, action, exit) must hold, in order.
type stepWant struct {
	do     Action
	phase  api.InstallationPhase
	reason api.ErrorReason
	op     string
	trace  []string
}

func checkStep(t *testing.T, got Step, want stepWant) {
	t.Helper()
	if got.Do != want.do || got.Phase != want.phase || got.Reason != want.reason || got.Op != want.op {
		t.Fatalf("step = {Do:%s Phase:%q Reason:%q Op:%q}, want {Do:%s Phase:%q Reason:%q Op:%q}",
			got.Do, got.Phase, got.Reason, got.Op, want.do, want.phase, want.reason, want.op)
	}
	lines := append(append(append([]string(nil), got.Checks...), got.Did), got.Exit)
	text := strings.Join(lines, "\n")
	at := 0
	for _, w := range want.trace {
		i := strings.Index(text[at:], w)
		if i < 0 {
			t.Fatalf("trace lines do not say %q (in order) in:\n%s", w, text)
		}
		at += i + len(w)
	}
}

var (
	execOne    = &Nested{Kind: api.KindExecution, Name: "one", Phase: api.InstallationProgressing, Reason: "deleting"}
	execFailed = &Nested{Kind: api.KindExecution, Name: "one", Phase: api.InstallationFailed, Reason: "uninstall failed"}
)

// TestDeletion_WalksTheSeedSteps walks the seed's deletion flow, one row
// per step and outcome, through the stretch that decides it.
func TestDeletion_WalksTheSeedSteps(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  Step
		want stepWant
	}{
		{"no finalizer left: nothing", DeletionChecks(DeletionStart{Force: true}),
			stepWant{do: DoEnd, trace: []string{"no finalizer of this controller left"}}},
		{"1. force-reconcile: the force stretch", DeletionChecks(DeletionStart{Finalizer: true, Force: true, SiblingImporters: []string{"sibling b imports db"}}),
			stepWant{do: DoForce, trace: []string{"1. force-reconcile annotation: skip the deletion checks"}}},
		{"2. a sibling imports an export: blocked", DeletionChecks(DeletionStart{Finalizer: true, SiblingImporters: []string{"sibling b imports db", "sibling c imports target k"}}),
			stepWant{do: DoSetStatus, phase: api.InstallationDeleting, reason: api.ReasonDeletionBlocked,
				trace: []string{"2. deletion waits: sibling b imports db; sibling c imports target k"}}},
		{"2. no sibling imports: on", DeletionChecks(DeletionStart{Finalizer: true}),
			stepWant{do: DoGoOn, trace: []string{"2. no sibling imports an export"}}},
		{"2. delete-without-uninstall is passed on first", DeletionChecks(DeletionStart{Finalizer: true, WithoutUninstall: true}),
			stepWant{do: DoPassOn, trace: []string{"2. no sibling imports an export"}}},
		{"3. the cache is behind: wait", DeletionPhase(NestedView{}),
			stepWant{do: DoWait, trace: []string{"cache is behind"}}},
		{"4. nothing nested: the finalizer goes", DeletionPhase(NestedView{Fresh: true}),
			stepWant{do: DoRemoveFinalizer, trace: []string{"4. nothing nested left: finalizer removed"}}},
		{"5. not final: Deleting", DeletionPhase(NestedView{Fresh: true, Phase: api.InstallationProgressing, Why: execOne, Exists: true, Deleting: true}),
			stepWant{do: DoSetStatus, phase: api.InstallationDeleting, trace: []string{"3. combined phase: Progressing", "5. Deleting: waits for execution one is Progressing: deleting"}}},
		{"5. a nested deletion failed: Failed", DeletionPhase(NestedView{Fresh: true, Phase: api.InstallationFailed, Why: execFailed, Exists: true, Deleting: true}),
			stepWant{do: DoSetStatus, phase: api.InstallationFailed, reason: api.ReasonDeletionFailed,
				trace: []string{"3. combined phase: Failed", "5. deletion failed: execution one is Failed: uninstall failed", api.AnnotationDeleteWithoutUninstall}}},
		{"5. nested objects deleting already: 7 without 6", DeletionPhase(NestedView{Fresh: true, Phase: api.InstallationSucceeded, Exists: true, Deleting: true}),
			stepWant{do: DoDeleteNested, trace: []string{"3. combined phase: Succeeded"}}},
		{"5. final, nothing deleting: 6 reads the imports", DeletionPhase(NestedView{Fresh: true, Phase: api.InstallationFailed, Why: execFailed, Exists: true}),
			stepWant{do: DoReadImports, trace: []string{"3. combined phase: Failed"}}},
		{"6. imports cannot be resolved: delete what exists", DeletionUpdate("Blueprint b not found", "", nil),
			stepWant{do: DoDeleteNested, trace: []string{"6. cannot check for an update (Blueprint b not found); deleting what exists"}}},
		{"6. no update required: 7", DeletionUpdate("", "", []string{"import x: dataobject/x does not exist"}),
			stepWant{do: DoDeleteNested}},
		{"6. update required, imports unsatisfied: stop", DeletionUpdate("", "generation 2 is not observed (1)", []string{"import x: dataobject/x does not exist"}),
			stepWant{do: DoSetStatus, reason: api.ReasonPendingDependencies,
				trace: []string{"6. update required (generation 2 is not observed (1)) but imports unsatisfied: import x: dataobject/x does not exist"}}},
		{"6. update required: update", DeletionUpdate("", "generation 2 is not observed (1)", nil),
			stepWant{do: DoUpdateNested, trace: []string{"6. update required (generation 2 is not observed (1)): nested objects updated"}}},
		{"6. the update failed: delete what exists", DeletionUpdated("template error"),
			stepWant{do: DoDeleteNested, trace: []string{"6. update failed (template error); deleting what exists"}}},
		{"6. updated: 7", DeletionUpdated(""), stepWant{do: DoDeleteNested}},
		{"7. deleting: Deleting", DeletionDeleted(),
			stepWant{do: DoSetStatus, phase: api.InstallationDeleting, trace: []string{"7. deleting the nested objects; waiting for them to go"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkStep(t, tc.got, tc.want) })
	}
}

// TestForceDeletion_WalksTheSeedSteps walks deletion step 1 (the
// force-reconcile annotation).
func TestForceDeletion_WalksTheSeedSteps(t *testing.T) {
	force := api.OperationForceReconcile
	for _, tc := range []struct {
		name string
		got  Step
		want stepWant
	}{
		{"1.1 nothing nested: no update, 1.2", ForceDeletionStart(false, false),
			stepWant{do: DoDeleteNested, op: force, trace: []string{"1.1 nested objects already deleting or gone: no update"}}},
		{"1.1 nested objects deleting: no update, 1.2", ForceDeletionStart(true, true),
			stepWant{do: DoDeleteNested, op: force, trace: []string{"1.1 nested objects already deleting or gone"}}},
		{"1.1 nested objects live: the imports are read", ForceDeletionStart(true, false), stepWant{do: DoReadImports}},
		{"1.1 imports unsatisfied: retried", ForceDeletionImports([]string{"import x: dataobject/x does not exist"}),
			stepWant{do: DoRetry, trace: []string{"1.1 cannot update the nested objects: import x: dataobject/x does not exist"}}},
		{"1.1 imports satisfied: update", ForceDeletionImports(nil),
			stepWant{do: DoUpdateNested, trace: []string{"1.1 nested objects updated"}}},
		{"1.1 updated: 1.2", ForceDeletionUpdated("", ""), stepWant{do: DoDeleteNested, op: force}},
		{"1.1 the creator lacks a right: 1.2 without the update", ForceDeletionUpdated(api.ReasonCreatorForbidden, "may not create execution one"),
			stepWant{do: DoDeleteNested, op: force, trace: []string{"1.1 cannot update the nested objects as the creator (may not create execution one); deleting what exists"}}},
		{"1.1 cannot render: the deletion fails", ForceDeletionUpdated(api.ReasonBlueprintNotFound, "Blueprint b not found"),
			stepWant{do: DoSetStatus, phase: api.InstallationFailed, reason: api.ReasonDeletionFailed,
				trace: []string{"1.1 deletion failed: cannot update the nested objects before the deletion (BlueprintNotFound: Blueprint b not found); fix it, or remove the " + api.AnnotationOperation}}},
		{"1.2 gone: the finalizer goes, 1.3 the annotation with it", ForceDeletionDeleted(true),
			stepWant{do: DoRemoveFinalizer, trace: []string{"1.2 nested objects gone: finalizer removed; 1.3 operation annotation removed"}}},
		{"1.2 not gone yet: Deleting", ForceDeletionDeleted(false),
			stepWant{do: DoSetStatus, phase: api.InstallationDeleting, trace: []string{"1.2 deleting the nested objects (force-reconcile propagated)"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkStep(t, tc.got, tc.want) })
	}
	if st := ForceDeletionDeleted(true); !st.DropOperation {
		t.Fatal("1.3: the operation annotation is not removed with the finalizer")
	}
	if st := ForceDeletionDeleted(false); !st.ClearDeletionFailed {
		t.Fatal("1.2: an earlier failed deletion is not forgotten while deleting")
	}
}

// TestStandard_WalksTheSeedSteps walks the seed's standard flow.
func TestStandard_WalksTheSeedSteps(t *testing.T) {
	progressing := &Nested{Kind: api.KindInstallation, Name: "sub", Phase: api.InstallationProgressing, Reason: "phase PendingDependencies"}
	blocked := []Blocker{{Waits: "import db waits for sibling database", State: "Progressing"}, {Waits: "parent p is not Progressing", State: "Succeeded"}}
	for _, tc := range []struct {
		name string
		got  Step
		want stepWant
	}{
		{"1. the cache is behind: wait", StandardPhase(NestedView{}, false), stepWant{do: DoWait, trace: []string{"cache is behind"}}},
		{"2. nothing nested: Succeeded by default", StandardPhase(NestedView{Fresh: true}, false),
			stepWant{do: DoReadImports, phase: api.InstallationSucceeded, trace: []string{"1. combined phase of the nested objects: none yet", "2. nothing nested: Succeeded by default"}}},
		{"2. not final: Progressing, wait", StandardPhase(NestedView{Fresh: true, Phase: api.InstallationProgressing, Why: progressing, Exists: true}, true),
			stepWant{do: DoSetStatus, phase: api.InstallationProgressing, trace: []string{"1. combined phase of the nested objects: Progressing", "2. Progressing: waits for installation sub is Progressing: phase PendingDependencies"}}},
		{"3. abort annotation: Aborted", StandardPhase(NestedView{Fresh: true, Phase: api.InstallationFailed, Why: execFailed, Exists: true}, true),
			stepWant{do: DoAbort, phase: api.InstallationAborted, trace: []string{"1. combined phase of the nested objects: Failed", "3. abort annotation: Aborted"}}},
		{"3. final, no abort: 4 reads the imports", StandardPhase(NestedView{Fresh: true, Phase: api.InstallationFailed, Why: execFailed, Exists: true}, false),
			stepWant{do: DoReadImports, phase: api.InstallationFailed}},
		{"4. update required: 4.1", StandardUpdate(StandardView{Required: "import db changed (dataobject/db)", Phase: api.InstallationSucceeded}),
			stepWant{do: DoCheckDependencies, trace: []string{"4. update required: import db changed (dataobject/db)"}}},
		{"4. no update, reconcile asked of a succeeded one: re-check the tree",
			StandardUpdate(StandardView{Phase: api.InstallationSucceeded, Status: api.InstallationSucceeded, Operation: api.OperationReconcile}),
			stepWant{do: DoRecheckNested, phase: api.InstallationProgressing, trace: []string{"4. no update required", "4. reconcile asked with nothing changed: nested objects re-checked"}}},
		{"4. no update, reconcile asked of a failed one: 5, 6 and the phase",
			StandardUpdate(StandardView{Phase: api.InstallationSucceeded, Status: api.InstallationFailed, Operation: api.OperationReconcile}),
			stepWant{do: DoFinish, phase: api.InstallationSucceeded, trace: []string{"4. no update required", "Succeeded"}}},
		{"4. no update, nested failed: Failed", StandardUpdate(StandardView{Phase: api.InstallationFailed, Why: execFailed, Status: api.InstallationProgressing}),
			stepWant{do: DoFinish, phase: api.InstallationFailed, trace: []string{"4. no update required", "Failed"}}},
		{"4.1 blocked: PendingDependencies", StandardDependencies(blocked, api.InstallationSucceeded),
			stepWant{do: DoSetStatus, phase: api.InstallationPendingDependencies, reason: api.ReasonPendingDependencies,
				trace: []string{"4.1 PendingDependencies: import db waits for sibling database (Progressing); parent p is not Progressing (Succeeded)"}}},
		{"4.1 nothing blocks: update", StandardDependencies(nil, api.InstallationSucceeded),
			stepWant{do: DoUpdateNested, trace: []string{"4.1 every dependency is satisfied"}}},
		{"4.1 a failed installation updates with force-reconcile", StandardDependencies(nil, api.InstallationFailed),
			stepWant{do: DoUpdateNested, op: api.OperationForceReconcile}},
		{"4.1 an aborted installation updates with force-reconcile", StandardDependencies(nil, api.InstallationAborted),
			stepWant{do: DoUpdateNested, op: api.OperationForceReconcile}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkStep(t, tc.got, tc.want) })
	}
	if st := StandardDependencies(blocked, ""); st.Message != "import db waits for sibling database; parent p is not Progressing" {
		t.Fatalf("4.1 lastError %q carries the blockers' states (it would be rewritten while they move)", st.Message)
	}
	if st := StandardUpdate(StandardView{Phase: api.InstallationFailed, Why: execFailed}); !reflect.DeepEqual(st.Why, execFailed) {
		t.Fatalf("the final phase lost the nested object that decided it: %+v", st.Why)
	}
}

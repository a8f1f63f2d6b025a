package installation_test

import (
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

const singleYAML = `apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: one}
spec:
  blueprint:
    inline:
      deployExecutions:
      - name: items
        template: "deployItems: [{name: a, type: mock}]"
`

func (e *env) annotate(kind, name, key, value string) {
	e.t.Helper()
	patch := `{"metadata":{"annotations":{"` + key + `":"` + value + `"}}}`
	if _, err := e.c.Patch(e.ctx, kind, e.ns, name, []byte(patch), false); err != nil {
		e.t.Fatal(err)
	}
}

func TestInstallation_ForceReconcileUpdatesDespiteAFailedDependency(t *testing.T) {
	e := start(t)
	e.apply(pairYAML)
	e.finish("producer", 0, api.DeployFailed, nil)
	e.waitPhase("producer", api.InstallationFailed)
	e.waitPhase("consumer", api.InstallationPendingDependencies)

	// The standard flow waits; force reconcile does not wait for the
	// sibling, but still needs the import to exist.
	e.annotate(api.KindInstallation, "consumer", api.AnnotationOperation, api.OperationForceReconcile)
	e.waitInst("consumer", "force step 1: the import does not exist", func(in *api.Installation) string {
		if in.Status.LastError == nil || !strings.Contains(in.Status.LastError.Message, "waits for sibling producer to export") {
			return "not stuck on the import"
		}
		return ""
	})
	testkit.Eventually(t, wait, "force step 1 traced", func() bool {
		got := e.explain("consumer")
		return strings.Contains(got, "force reconcile") && strings.Contains(got, "1. PendingDependencies: import in waits for sibling producer to export")
	})
	e.apply(`apiVersion: cairn.dev/v1alpha1
kind: DataObject
metadata: {name: shared}
data: "by hand"`)
	// A DataObject nobody owns satisfies the import; force reconcile runs.
	in := e.waitInst("consumer", "force reconciled", func(in *api.Installation) string {
		if in.Status.Phase != api.InstallationProgressing || in.Annotations[api.AnnotationOperation] != "" {
			return "not yet"
		}
		return ""
	})
	if in.Status.ObservedGeneration != in.Generation {
		t.Fatalf("force step 4: observed generation %d, generation %d", in.Status.ObservedGeneration, in.Generation)
	}
	ex, err := e.exec("consumer")
	if err != nil {
		t.Fatal(err)
	}
	if string(ex.Spec.DeployItems[0].Config) != `{"version":"by hand"}` {
		t.Fatalf("execution %v %s", ex.Annotations, ex.Spec.DeployItems[0].Config)
	}
}

func TestInstallation_AbortAnnotationAbortsAFinishedInstallation(t *testing.T) {
	e := start(t)
	e.apply(singleYAML)
	e.finish("one", 0, api.DeploySucceeded, nil)
	e.waitPhase("one", api.InstallationSucceeded)
	e.annotate(api.KindInstallation, "one", api.AnnotationOperation, api.OperationAbort)
	e.waitInst("one", "Aborted, the annotation removed", func(in *api.Installation) string {
		if in.Status.Phase != api.InstallationAborted || in.Annotations[api.AnnotationOperation] != "" {
			return "not yet"
		}
		return ""
	})
	e.waitExplain("one", "3. abort annotation: Aborted")
}

func TestInstallation_IgnoreAnnotationLeavesAFinalInstallationAlone(t *testing.T) {
	e := start(t)
	e.apply(singleYAML)
	e.finish("one", 0, api.DeploySucceeded, nil)
	e.waitPhase("one", api.InstallationSucceeded)
	e.annotate(api.KindInstallation, "one", api.AnnotationIgnore, "true")
	testkit.Eventually(t, wait, "the ignore step traced", func() bool {
		return strings.Contains(e.explain("one"), "1. ignore annotation")
	})
	// A spec change is not acted on while ignored.
	if _, err := client.For[*api.Installation](e.c).Patch(e.ctx, e.ns, "one",
		[]byte(`{"spec":{"blueprint":{"inline":{"deployExecutions":[{"name":"items","template":"deployItems: [{name: b, type: mock}]"}]}}}}`), false); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, wait, "the change ignored", func() bool {
		return strings.Count(e.explain("one"), "1. ignore annotation") >= 2
	})
	ex, _ := e.exec("one")
	if ex.Spec.DeployItems[0].Name != "a" {
		t.Fatalf("an ignored installation re-rendered its execution")
	}
}

func TestInstallation_ReconcileOfAFailedInstallationRunsItAgain(t *testing.T) {
	e := start(t)
	e.apply(singleYAML)
	g := e.finish("one", 0, api.DeployFailed, nil)
	e.waitPhase("one", api.InstallationFailed)
	e.annotate(api.KindInstallation, "one", api.AnnotationOperation, api.OperationReconcile)
	e.waitInst("one", "reconcile consumed", func(in *api.Installation) string {
		if in.Annotations[api.AnnotationOperation] != "" || in.Status.Phase != api.InstallationProgressing {
			return "not yet"
		}
		return ""
	})
	e.finish("one", g-1, api.DeploySucceeded, nil)
	e.waitPhase("one", api.InstallationSucceeded)
}

func TestInstallation_DeletionWithForceReconcileSkipsTheSiblingCheck(t *testing.T) {
	e := start(t)
	e.apply(pairYAML)
	e.finish("producer", 0, api.DeploySucceeded, nil)
	e.finish("consumer", 0, api.DeploySucceeded, nil)
	e.waitPhase("consumer", api.InstallationSucceeded)
	// The deletion is blocked by the importer; force-reconcile lets it
	// go on without the check.
	if _, _, err := e.c.Delete(e.ctx, api.KindInstallation, e.ns, "producer", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitInst("producer", "deletion blocked", func(in *api.Installation) string {
		if in.Status.LastError == nil || in.Status.LastError.Reason != "DeletionBlocked" {
			return "not blocked"
		}
		return ""
	})
	e.annotate(api.KindInstallation, "producer", api.AnnotationOperation, api.OperationForceReconcile)
	e.waitGone(api.KindInstallation, "producer")
	e.waitGone(api.KindExecution, "producer")
	if _, err := e.inst("consumer"); err != nil {
		t.Fatalf("the importer went too: %v", err)
	}
	e.waitExplain("producer", "1. force-reconcile annotation: skip the deletion checks")
}

func TestInstallation_DeleteWithoutUninstallIsPassedToTheExecution(t *testing.T) {
	e := start(t)
	e.apply(singleYAML)
	e.finish("one", 0, api.DeploySucceeded, nil)
	e.waitPhase("one", api.InstallationSucceeded)
	// A finalizer of the test holds the execution (as a deploy item
	// still being uninstalled would), so that it stays to be looked at.
	if _, err := e.c.Patch(e.ctx, api.KindExecution, e.ns, "one", []byte(`{"metadata":{"finalizers":["cairn.dev/execution","test.cairn.dev/hold"]}}`), false); err != nil {
		t.Fatal(err)
	}
	e.annotate(api.KindInstallation, "one", api.AnnotationDeleteWithoutUninstall, "true")
	if _, _, err := e.c.Delete(e.ctx, api.KindInstallation, e.ns, "one", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyNil(t, wait, "execution deleting with delete-without-uninstall", func() error {
		ex, err := e.exec("one")
		if err != nil {
			return err
		}
		if !ex.Deleting() || ex.Annotations[api.AnnotationDeleteWithoutUninstall] != "true" {
			return errString("not yet")
		}
		return nil
	})
	e.waitInst("one", "Deleting, waiting for the execution", func(in *api.Installation) string {
		if in.Status.Phase != api.InstallationDeleting {
			return "not Deleting"
		}
		return ""
	})
	testkit.Eventually(t, wait, "the trace says what the deletion waits for", func() bool {
		return strings.Contains(e.explain("one"), "5. Deleting: waits for execution one is Progressing: deleting")
	})
	if _, err := e.c.Patch(e.ctx, api.KindExecution, e.ns, "one", []byte(`{"metadata":{"finalizers":null}}`), false); err != nil {
		t.Fatal(err)
	}
	e.waitGone(api.KindInstallation, "one")
}

// threeLevelYAML nests an installation two levels deep; the leaf imports
// the root's import through its parent.
const threeLevelYAML = `apiVersion: cairn.dev/v1alpha1
kind: Blueprint
metadata: {name: leaf}
spec:
  imports: [{name: greeting}]
  exports: [{name: said}]
  deployExecutions:
  - name: items
    template: "deployItems: [{name: say, type: mock, config: {text: {{ .imports.greeting | quote }}}}]"
  exportExecutions:
  - name: out
    template: "exports: {said: {{ .imports.greeting | upper | quote }}}"
---
apiVersion: cairn.dev/v1alpha1
kind: Blueprint
metadata: {name: middle}
spec:
  imports: [{name: greeting}]
  exports: [{name: said}]
  subinstallations:
  - name: leaf
    blueprint: {ref: leaf}
    imports: {data: [{name: greeting, dataRef: greeting}]}
    exports: {data: [{name: said, dataRef: leaf-said}]}
  exportExecutions:
  - name: out
    template: "exports: {said: {{ .subinstallations.leaf.exports.said | quote }}}"
---
apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: top}
spec:
  imports: {data: [{name: greeting, value: hello}]}
  exports: {data: [{name: said, dataRef: top-said}]}
  blueprint:
    inline:
      imports: [{name: greeting}]
      exports: [{name: said}]
      subinstallations:
      - name: mid
        blueprint: {ref: middle}
        imports: {data: [{name: greeting, dataRef: greeting}]}
        exports: {data: [{name: said, dataRef: mid-said}]}
      exportExecutions:
      - name: out
        template: "exports: {said: {{ .subinstallations.mid.exports.said | quote }}}"
`

func TestInstallation_ThreeLevelTreeConvergesAndExportsFlowUp(t *testing.T) {
	e := start(t)
	e.apply(threeLevelYAML)
	e.finish("top-mid-leaf", 0, api.DeploySucceeded, nil)
	ex, _ := e.exec("top-mid-leaf")
	if string(ex.Spec.DeployItems[0].Config) != `{"text":"hello"}` {
		t.Fatalf("the leaf did not get the root's import: %s", ex.Spec.DeployItems[0].Config)
	}
	e.waitPhase("top-mid-leaf", api.InstallationSucceeded)
	e.waitPhase("top-mid", api.InstallationSucceeded)
	e.waitPhase("top", api.InstallationSucceeded)
	do, err := client.For[*api.DataObject](e.c).Get(e.ctx, e.ns, "top-said")
	if err != nil {
		t.Fatal(err)
	}
	if string(do.Data) != `"HELLO"` {
		t.Fatalf("root export %s", do.Data)
	}
	if _, _, err := e.c.Delete(e.ctx, api.KindInstallation, e.ns, "top", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"top-mid-leaf", "top-mid", "top"} {
		e.waitGone(api.KindInstallation, n)
	}
}

func TestInstallation_NothingNestedSucceedsByDefaultAndDeletesAtOnce(t *testing.T) {
	e := start(t)
	e.apply(`apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: empty}
spec:
  blueprint: {inline: {}}
`)
	e.waitPhase("empty", api.InstallationSucceeded)
	e.waitExplain("empty", "2. nothing nested: Succeeded by default")
	if _, _, err := e.c.Delete(e.ctx, api.KindInstallation, e.ns, "empty", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(api.KindInstallation, "empty")
	e.waitExplain("empty", "4. nothing nested left: finalizer removed")
}

func TestInstallation_NestedCheckFollowsAPhaseChangeOfTheExecution(t *testing.T) {
	e := start(t)
	e.apply(singleYAML)
	g := e.finish("one", 0, api.DeploySucceeded, nil)
	e.waitPhase("one", api.InstallationSucceeded)
	// The execution fails later (someone re-ran it): the final, unmodified
	// installation follows it through the nested check.
	e.annotate(api.KindExecution, "one", api.AnnotationOperation, api.OperationReconcile)
	e.finish("one", g-1, api.DeployFailed, nil)
	in := e.waitPhase("one", api.InstallationFailed)
	if in.Status.LastError == nil || in.Status.LastError.Reason != "NestedFailed" {
		t.Fatalf("lastError %+v", in.Status.LastError)
	}
	e.waitExplain("one", "5. nested phase changed")
}

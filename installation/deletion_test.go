package installation_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

// hold puts a finalizer of the test on an execution (as a deploy item
// still being uninstalled would), so that a deleting execution stays to
// be looked at; release removes it.
func (e *env) hold(execution string) {
	e.t.Helper()
	if _, err := e.c.Patch(e.ctx, api.KindExecution, e.ns, execution,
		[]byte(`{"metadata":{"finalizers":["cairn.dev/execution","test.cairn.dev/hold"]}}`), false); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) release(execution string) {
	e.t.Helper()
	if _, err := e.c.Patch(e.ctx, api.KindExecution, e.ns, execution, []byte(`{"metadata":{"finalizers":null}}`), false); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) deleteInst(name string) {
	e.t.Helper()
	if _, _, err := e.c.Delete(e.ctx, api.KindInstallation, e.ns, name, api.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// ignoreWhile runs change while the installation carries the ignore
// annotation (core step 1: a final installation is left alone), then
// removes the annotation: the next reconcile sees all the changes at
// once.
func (e *env) ignoreWhile(name string, change func()) {
	e.t.Helper()
	n := strings.Count(e.explain(name), "1. ignore annotation")
	e.annotate(api.KindInstallation, name, api.AnnotationIgnore, "true")
	testkit.EventuallyNil(e.t, wait, "the ignore annotation seen", func() error {
		if got := e.explain(name); strings.Count(got, "1. ignore annotation") <= n {
			return errors.New("trace:\n" + got)
		}
		return nil
	})
	change()
	if _, err := e.c.Patch(e.ctx, api.KindInstallation, e.ns, name,
		[]byte(`{"metadata":{"annotations":{"cairn.dev/ignore":null}}}`), false); err != nil {
		e.t.Fatal(err)
	}
}

// greetingYAML is an installation importing a DataObject made by hand.
const greetingYAML = `apiVersion: cairn.dev/v1alpha1
kind: DataObject
metadata: {name: greeting}
data: hello
---
apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: one}
spec:
  imports: {data: [{name: greeting, dataRef: greeting}]}
  blueprint:
    inline:
      deployExecutions:
      - name: items
        template: "deployItems: [{name: a, type: mock, config: {text: {{ .imports.greeting | quote }}}}]"
`

// Deletion step 6: an import changed since the last reconcile updates the
// nested objects before they are deleted.
func TestInstallation_DeletionUpdatesTheNestedObjectsFirstWhenAnImportChanged(t *testing.T) {
	e := start(t)
	e.apply(greetingYAML)
	e.finish("one", 0, api.DeploySucceeded, nil)
	e.waitPhase("one", api.InstallationSucceeded)
	e.hold("one")
	e.ignoreWhile("one", func() {
		if _, err := client.For[*api.DataObject](e.c).Patch(e.ctx, e.ns, "greeting", []byte(`{"data":"bonjour"}`), false); err != nil {
			t.Fatal(err)
		}
		e.deleteInst("one")
	})
	var ex *api.Execution
	testkit.EventuallyNil(t, wait, "the execution deleting", func() error {
		var err error
		if ex, err = e.exec("one"); err != nil {
			return err
		}
		if !ex.Deleting() {
			return errors.New("not deleting")
		}
		return nil
	})
	if got := string(ex.Spec.DeployItems[0].Config); got != `{"text":"bonjour"}` {
		t.Fatalf("deleted with config %s: step 6 did not update the execution with the changed import first", got)
	}
	e.waitExplain("one", "6. update required (import greeting changed")
	e.release("one")
	e.waitGone(api.KindInstallation, "one")
}

// bpYAML is an installation whose blueprint is a Blueprint object.
const bpYAML = `apiVersion: cairn.dev/v1alpha1
kind: Blueprint
metadata: {name: bp}
spec:
  deployExecutions:
  - name: items
    template: "deployItems: [{name: a, type: mock}]"
---
apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: one}
spec:
  blueprint: {ref: bp}
`

// Deletion step 1.1: with force-reconcile, an update that cannot render
// fails the deletion with the error; removing the annotation lets the
// standard deletion delete what exists.
func TestInstallation_ForceDeletionFailsWhenTheUpdateCannotRender(t *testing.T) {
	e := start(t)
	e.apply(bpYAML)
	e.finish("one", 0, api.DeploySucceeded, nil)
	e.waitPhase("one", api.InstallationSucceeded)
	e.ignoreWhile("one", func() {
		if _, err := e.c.Patch(e.ctx, api.KindBlueprint, e.ns, "bp",
			[]byte(`{"spec":{"deployExecutions":[{"name":"items","template":"{{ fail \"broken on purpose\" }}"}]}}`), false); err != nil {
			t.Fatal(err)
		}
		e.annotate(api.KindInstallation, "one", api.AnnotationOperation, api.OperationForceReconcile)
		e.deleteInst("one")
	})
	in := e.waitInst("one", "deletion failed on the render", func(in *api.Installation) string {
		if in.Status.Phase != api.InstallationFailed || in.Status.LastError == nil || in.Status.LastError.Reason != "DeletionFailed" {
			return "not failed"
		}
		return ""
	})
	for _, want := range []string{"cannot update the nested objects before the deletion (RenderFailed", "remove the cairn.dev/operation annotation"} {
		if !strings.Contains(in.Status.LastError.Message, want) {
			t.Fatalf("lastError %q does not say %q", in.Status.LastError.Message, want)
		}
	}
	if in.Annotations[api.AnnotationOperation] != api.OperationForceReconcile {
		t.Fatalf("annotations %v: the force-reconcile annotation went with the failure", in.Annotations)
	}
	if ex, err := e.exec("one"); err != nil || ex.Deleting() {
		t.Fatalf("the execution was deleted although the update failed: %v %+v", err, ex)
	}
	e.waitExplain("one", "1.1 deletion failed")
	if _, err := e.c.Patch(e.ctx, api.KindInstallation, e.ns, "one",
		[]byte(`{"metadata":{"annotations":{"cairn.dev/operation":null}}}`), false); err != nil {
		t.Fatal(err)
	}
	e.waitGone(api.KindInstallation, "one")
	e.waitGone(api.KindExecution, "one")
	e.waitExplain("one", "6. update failed (")
}

// Deletion step 1.3 (a departure): the force-reconcile annotation stays
// while the nested objects go, so that every reconcile of the deletion
// skips the checks; it goes with the finalizer.
func TestInstallation_ForceDeletionKeepsTheAnnotationUntilTheNestedObjectsAreGone(t *testing.T) {
	e := start(t)
	e.apply(pairYAML)
	e.finish("producer", 0, api.DeploySucceeded, nil)
	e.finish("consumer", 0, api.DeploySucceeded, nil)
	e.waitPhase("consumer", api.InstallationSucceeded)
	e.hold("producer")
	e.deleteInst("producer")
	e.waitInst("producer", "deletion blocked", func(in *api.Installation) string {
		if in.Status.LastError == nil || in.Status.LastError.Reason != "DeletionBlocked" {
			return "not blocked"
		}
		return ""
	})
	e.annotate(api.KindInstallation, "producer", api.AnnotationOperation, api.OperationForceReconcile)
	testkit.EventuallyNil(t, wait, "the producer's execution deleting", func() error {
		ex, err := e.exec("producer")
		if err != nil {
			return err
		}
		if !ex.Deleting() || ex.Annotations[api.AnnotationOperation] != api.OperationForceReconcile {
			in, _ := e.inst("producer")
			return fmt.Errorf("execution %v %v; installation %s; trace:\n%s", ex.DeletionTimestamp, ex.Annotations, statusString(in), e.explain("producer"))
		}
		return nil
	})
	in := e.waitPhase("producer", api.InstallationDeleting)
	if in.Annotations[api.AnnotationOperation] != api.OperationForceReconcile {
		t.Fatalf("annotations %v: force-reconcile removed while the nested objects remain", in.Annotations)
	}
	// A reconcile while the execution stays: still no sibling check.
	e.annotate(api.KindInstallation, "producer", "test.cairn.dev/poke", "1")
	testkit.Eventually(t, wait, "a second force deletion pass", func() bool {
		return strings.Count(e.explain("producer"), "1. force-reconcile annotation") >= 2
	})
	_, after, _ := strings.Cut(e.explain("producer"), "1. force-reconcile annotation")
	if got := after; strings.Contains(got, "deletion waits: sibling consumer") {
		t.Fatalf("the sibling check ran during a force deletion:\n%s", got)
	}
	e.release("producer")
	e.waitGone(api.KindInstallation, "producer")
}

// A deploy failure of an execution that is then deleted is no deletion
// failure: the installation is Deleting until the execution's deletion
// itself fails.
func TestInstallation_DeployFailureOfADeletingExecutionIsNoDeletionFailure(t *testing.T) {
	e := start(t)
	e.apply(singleYAML)
	e.finish("one", 0, api.DeployFailed, nil)
	e.waitPhase("one", api.InstallationFailed)
	e.hold("one")
	e.deleteInst("one")
	// The execution keeps the Failed phase of its deploy (its controller
	// is slow, or down): the installation waits for it.
	testkit.Eventually(t, wait, "a reconcile of the deletion with the execution deleting", func() bool {
		got := e.explain("one")
		return strings.Contains(got, "5. Deleting: waits for execution one") || strings.Contains(got, "5. deletion failed")
	})
	if got := e.explain("one"); strings.Contains(got, "5. deletion failed") {
		t.Fatalf("a deploy failure of the deleting execution reported as a deletion failure:\n%s", got)
	}
	if in, _ := e.inst("one"); in.Status.Phase != api.InstallationDeleting {
		t.Fatalf("status %s, want Deleting", statusString(in))
	}
	e.waitExplain("one", "5. Deleting: waits for execution one is Progressing: deleting")
	// The execution's deletion fails (a deploy item's uninstall failed).
	ex, err := e.exec("one")
	if err != nil {
		t.Fatal(err)
	}
	ex.Status.Phase = api.DeployFailed
	ex.Status.LastError = &api.LastError{Reason: "DeletionFailed", Message: "deletion of deploy item a failed: UninstallFailed: exit status 3"}
	if _, err := client.For[*api.Execution](e.c).UpdateStatus(e.ctx, ex); err != nil {
		t.Fatal(err)
	}
	in := e.waitInst("one", "deletion failed", func(in *api.Installation) string {
		if in.Status.Phase != api.InstallationFailed || in.Status.LastError == nil || in.Status.LastError.Reason != "DeletionFailed" {
			return "not failed"
		}
		return ""
	})
	if !strings.Contains(in.Status.LastError.Message, "UninstallFailed: exit status 3") {
		t.Fatalf("lastError %+v does not name the execution's deletion failure", in.Status.LastError)
	}
	e.release("one")
	e.waitGone(api.KindInstallation, "one")
}

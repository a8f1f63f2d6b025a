package execution_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
)

// setItemStatus writes a deploy item's status as its deployer would.
func setItemStatus(t *testing.T, e *deploytest.Env, name string, phase api.DeployPhase, reason api.ErrorReason, msg string) {
	t.Helper()
	testkit.EventuallyNil(t, deploytest.Wait, "status of "+name+" written", func() error {
		d, err := client.For[*api.DeployItem](e.C).Get(e.Ctx(), deploytest.NS, name)
		if err != nil {
			return err
		}
		d.Status.Phase, d.Status.ObservedGeneration = phase, d.Generation
		d.Status.LastError = &api.LastError{Reason: reason, Message: msg}
		_, err = client.For[*api.DeployItem](e.C).UpdateStatus(e.Ctx(), d)
		return err
	})
}

// The seed's delete operation: a deleting item in phase Failed means the
// deletion failed — but only when the Failed is the deletion's. An item
// that failed its deploy and is then deleted waits for its deployer (here
// one that is down) to uninstall it: the execution is Deleting, until
// that uninstall fails.
func TestExecution_DeployFailedItemBeingDeletedIsDeletingUntilItsUninstallFails(t *testing.T) {
	e := start(t)
	e.Execution("app", []api.DeployItemTemplate{{Name: "a", Type: "down", Config: json.RawMessage(`{}`)}})
	e.WaitItem("app-a", "created", func(api.DeployItem) bool { return true })
	// The deployer fails the deploy and goes down; its finalizer stays.
	e.Patch(api.KindDeployItem, "app-a", `{"metadata":{"finalizers":["test.cairn.dev/deployer-down"]}}`)
	setItemStatus(t, e, "app-a", api.DeployFailed, "DeployFailed", "exit status 1")
	e.WaitExecution("app", api.DeployFailed)

	e.Delete(api.KindExecution, "app")
	testkit.Eventually(t, deploytest.Wait, "a delete operation with the item deleting", func() bool {
		got := e.Explain(api.KindExecution, "app")
		return strings.Contains(got, "deleting after its deploy failed") || strings.Contains(got, "Failed: deletion of deploy item")
	})
	x := e.GetExecution("app")
	if x.Status.Phase != api.DeployDeleting || x.Status.LastError != nil {
		t.Fatalf("status %+v: a deploy failure of an item being deleted reported as a deletion failure", x.Status)
	}
	if d, _ := deploytest.Get[api.DeployItem](e, api.KindDeployItem, "app-a"); !d.Deleting() {
		t.Fatal("the item is not being deleted")
	}

	// Its deployer is back and its uninstall fails: now the deletion failed.
	setItemStatus(t, e, "app-a", api.DeployFailed, "UninstallFailed", "the target refused: exit status 3")
	testkit.EventuallyNil(t, deploytest.Wait, "execution Failed by a's deletion", func() error {
		x := e.GetExecution("app")
		if x.Status.Phase != api.DeployFailed || x.Status.LastError == nil || x.Status.LastError.Reason != "DeletionFailed" ||
			!strings.Contains(x.Status.LastError.Message, "deletion of deploy item a failed: UninstallFailed: the target refused") {
			return fmt.Errorf("status %+v", x.Status)
		}
		return nil
	})
	e.Patch(api.KindDeployItem, "app-a", `{"metadata":{"finalizers":null}}`)
	e.WaitGone(api.KindExecution, "app")
}

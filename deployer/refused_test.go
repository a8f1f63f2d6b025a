package deployer_test

import (
	"fmt"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
)

// A write the API refuses (here: the namespace is at its object limit, so
// the DataObject of the exports cannot be created) is in the item's
// lastError, naming the limit; once there is room, the retry publishes the
// exports and the item succeeds with no lastError.
func TestDeployer_RefusedExportsCreateIsInLastErrorNamingTheLimit(t *testing.T) {
	r := newRecorder()
	e := start(t, r)
	r.item(e, "x")
	e.WaitItem("x", "picked up", func(d api.DeployItem) bool {
		return d.Status.Phase == api.DeployProgressing && d.HasFinalizer(api.FinalizerDeployer)
	})
	if _, err := e.C.Patch(e.Ctx(), api.KindNamespace, "", deploytest.NS, []byte(`{"spec":{"limits":{"objects":1}}}`), false); err != nil {
		t.Fatal(err)
	}
	r.release("x")
	e.Patch(api.KindDeployItem, "x", `{"metadata":{"labels":{"poke":"1"}}}`) // an event, so the run is looked at again
	d := e.WaitItem("x", "lastError naming the refused write", func(d api.DeployItem) bool {
		le := d.Status.LastError
		return le != nil && le.Reason == api.ReasonWriteRefused
	})
	if le := d.Status.LastError; !strings.Contains(le.Message, "spec.limits.objects") || !strings.Contains(le.Message, "Forbidden") ||
		!strings.Contains(le.Message, "exports of x") {
		t.Fatalf("lastError %+v: want the API's reason, the limit and the write", le)
	}
	if d.Status.Phase != api.DeployProgressing {
		t.Fatalf("phase %s: want Progressing until the end is written", d.Status.Phase)
	}
	if _, err := e.C.Patch(e.Ctx(), api.KindNamespace, "", deploytest.NS, []byte(`{"spec":{"limits":{"objects":10}}}`), false); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyNil(t, deploytest.Wait, "Succeeded with its exports once there is room", func() error {
		d, _ := deploytest.Get[api.DeployItem](e, api.KindDeployItem, "x")
		if d.Status.Phase != api.DeploySucceeded || d.Status.LastError != nil || d.Status.ExportRef != deployer.ExportName("x") {
			return fmt.Errorf("status %+v", d.Status)
		}
		return nil
	})
}

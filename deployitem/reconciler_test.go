package deployitem_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer/mock"
	"cairn.dev/cairn/deployitem"
	"cairn.dev/cairn/execution"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/manager"
)

func start(t *testing.T, ts deployitem.Timeouts) *deploytest.Env {
	return deploytest.Start(t, deploytest.Options{},
		manager.Controller{Name: "execution", Setup: func(tm *manager.Term) error { return execution.Setup(tm, execution.Options{}) }},
		manager.Controller{Name: "deployer-mock", Setup: mock.Setup},
		manager.Controller{Name: "deployitem-timeout", Setup: func(tm *manager.Term) error {
			return deployitem.Setup(tm, deployitem.Options{Timeouts: ts})
		}},
	)
}

func failedWith(reason api.ErrorReason) func(api.DeployItem) bool {
	return func(d api.DeployItem) bool {
		return d.Status.Phase == api.DeployFailed && d.Status.LastError != nil && d.Status.LastError.Reason == reason &&
			d.Status.ObservedGeneration == d.Generation
	}
}

func TestTimeout_ItemNoDeployerHandlesFailsByPickupTimeout(t *testing.T) {
	e := start(t, deployitem.Timeouts{Pickup: time.Second})
	e.Execution("app", []api.DeployItemTemplate{{Name: "a", Type: "helm", Config: json.RawMessage(`{}`)}})
	d := e.WaitItem("app-a", "failed by the pickup timeout", failedWith(api.ReasonPickupTimeout))
	if !strings.Contains(d.Status.LastError.Message, `no deployer picked up this deploy item of type "helm"`) {
		t.Fatalf("lastError %q does not say no deployer picked it up", d.Status.LastError.Message)
	}
	x := e.WaitExecution("app", api.DeployFailed)
	if !strings.Contains(x.Status.LastError.Message, "a failed: PickupTimeout") {
		t.Fatalf("execution lastError %q does not name a and its timeout", x.Status.LastError.Message)
	}
	e.WaitExplain(api.KindDeployItem, "app-a", "pickup: timed out after 1s: no deployer picked it up")
}

func TestTimeout_ProgressingTimeoutAbortsTheItem(t *testing.T) {
	e := start(t, deployitem.Timeouts{})
	e.Execution("app", []api.DeployItemTemplate{{Name: "a", Type: "mock", Config: json.RawMessage(`{"delay":"1h"}`),
		Timeout: &api.Duration{Duration: time.Second}}})
	e.WaitItem("app-a", "aborted by the progressing timeout, the abort annotations gone", func(d api.DeployItem) bool {
		for _, a := range []string{api.AnnotationOperation, api.AnnotationAbortTime, api.AnnotationAbortTimeout} {
			if _, ok := d.Annotations[a]; ok {
				return false
			}
		}
		return failedWith(api.ReasonProgressingTimeout)(d)
	})
	e.WaitExecution("app", api.DeployFailed)
	e.WaitExplain(api.KindDeployItem, "app-a", "progressing: timed out")
	e.WaitExplain(api.KindDeployItem, "app-a", "did not finish within the progressing timeout")
}

func TestTimeout_AbortNoDeployerCarriesOutFailsByAbortingTimeout(t *testing.T) {
	e := start(t, deployitem.Timeouts{Aborting: time.Second})
	obj := e.Create(deploytest.Object(api.KindDeployItem, "lone", &api.DeployItem{Spec: api.DeployItemSpec{Type: "helm"}}))
	var d api.DeployItem
	if err := obj.Into(&d); err != nil {
		t.Fatal(err)
	}
	d.Status = api.DeployItemStatus{Phase: api.DeployProgressing, LastReconcileTime: time.Now().UTC(), ObservedGeneration: 1}
	st, _ := api.FromResource(&d)
	if _, err := e.C.UpdateStatus(e.Ctx(), st); err != nil {
		t.Fatal(err)
	}
	e.Patch(api.KindDeployItem, "lone", `{"metadata":{"annotations":{"cairn.dev/operation":"abort"}}}`)
	got := e.WaitItem("lone", "failed by the aborting timeout", failedWith(api.ReasonAbortingTimeout))
	if !strings.Contains(got.Status.LastError.Message, "did not carry out the abort") {
		t.Fatalf("lastError %q", got.Status.LastError.Message)
	}
	e.WaitExplain(api.KindDeployItem, "lone", "aborting: timed out after 1s")
}

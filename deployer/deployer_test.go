package deployer_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/manager"
)

// recorder is a deployer of type "rec" whose runs end when released and
// which counts its calls.
type recorder struct {
	mu       sync.Mutex
	runs     map[string]bool // run ids seen
	released map[string]bool // item names whose runs may end
	deletes  map[string]int  // uninstalls by item name
	aborts   int
	// hangDelete names the items whose uninstall never ends by itself.
	hangDelete map[string]bool
}

func newRecorder() *recorder {
	return &recorder{runs: map[string]bool{}, released: map[string]bool{}, deletes: map[string]int{}}
}

func (r *recorder) Reconcile(_ context.Context, item *deployer.Item) (deployer.Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs[item.Run] = true
	if !r.released[item.Name] {
		return deployer.InProgress(0), nil
	}
	return deployer.Succeeded([]byte(fmt.Sprintf(`{"run":%q}`, item.Run))), nil
}

func (r *recorder) Abort(context.Context, *deployer.Item) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.aborts++
	return nil
}

func (r *recorder) Delete(_ context.Context, item *deployer.Item) (deployer.Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deletes[item.Name]++
	if r.hangDelete[item.Name] {
		return deployer.InProgress(0), nil
	}
	return deployer.Succeeded(nil), nil
}

func (r *recorder) release(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.released[name] = true
}

func (r *recorder) counts() (runs, aborts int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.runs), r.aborts
}

func (r *recorder) uninstalls(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deletes[name]
}

func start(t *testing.T, r *recorder) *deploytest.Env {
	return deploytest.Start(t, deploytest.Options{}, manager.Controller{Name: "deployer-rec", Setup: func(tm *manager.Term) error {
		return deployer.Setup(tm, deployer.Options{Type: "rec", Deployer: r})
	}})
}

func (r *recorder) item(e *deploytest.Env, name string) {
	e.Create(deploytest.Object(api.KindDeployItem, name, &api.DeployItem{Spec: api.DeployItemSpec{Type: "rec"}}))
}

// phases records the (phase, observedGeneration) of every status the item
// goes through, from a watch.
func phases(t *testing.T, e *deploytest.Env, name string) (stop func() []string) {
	w, err := e.C.Watch(e.Ctx(), api.KindDeployItem, deploytest.NS, api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := ""
		for ev := range w.Events() {
			if ev.Object == nil || ev.Object.Name != name {
				continue
			}
			var d api.DeployItem
			if ev.Object.Into(&d) != nil {
				continue
			}
			s := fmt.Sprintf("%s/%d", d.Status.Phase, d.Status.ObservedGeneration)
			if s != last {
				seen = append(seen, s)
				last = s
			}
		}
	}()
	return func() []string { w.Stop(); <-done; return seen }
}

func TestDeployer_PicksUpThenFinishesInOneStatusWriteWithExports(t *testing.T) {
	r := newRecorder()
	e := start(t, r)
	stop := phases(t, e, "x")
	r.item(e, "x")
	d := e.WaitItem("x", "picked up", func(d api.DeployItem) bool {
		return d.Status.Phase == api.DeployProgressing && !d.Status.LastReconcileTime.IsZero() && d.HasFinalizer(api.FinalizerDeployer)
	})
	r.release("x")
	e.Patch(api.KindDeployItem, "x", `{"metadata":{"labels":{"poke":"1"}}}`) // an event, so the run is looked at again
	d = e.WaitItem("x", "Succeeded", func(d api.DeployItem) bool { return d.Status.Phase == api.DeploySucceeded })
	if d.Status.ObservedGeneration != d.Generation || d.Status.ExportRef != deployer.ExportName("x") {
		t.Fatalf("status %+v: want observedGeneration and exportRef", d.Status)
	}
	if got := e.Data(d.Status.ExportRef); got["run"] != deployer.RunID(d.UID, d.Generation, d.Status.LastReconcileTime) {
		t.Fatalf("exports %v: want the run id of the pickup", got)
	}
	if seen := stop(); strings.Join(seen, " ") != "/0 Progressing/1 Succeeded/1" {
		t.Fatalf("statuses %v: want the pickup, then the final phase", seen)
	}
}

func TestDeployer_ReconcileAnnotationStartsANewRun(t *testing.T) {
	r := newRecorder()
	e := start(t, r)
	r.release("x")
	r.item(e, "x")
	first := e.WaitItem("x", "Succeeded", func(d api.DeployItem) bool { return d.Status.Phase == api.DeploySucceeded })
	e.Patch(api.KindDeployItem, "x", `{"metadata":{"annotations":{"cairn.dev/operation":"reconcile"}}}`)
	second := e.WaitItem("x", "run again", func(d api.DeployItem) bool {
		_, asked := d.Annotations[api.AnnotationOperation]
		return !asked && d.Status.Phase == api.DeploySucceeded && d.Status.LastReconcileTime.After(first.Status.LastReconcileTime)
	})
	if runs, _ := r.counts(); runs != 2 {
		t.Fatalf("%d runs, want 2", runs)
	}
	// The new run's exports replace the first run's in the same DataObject.
	if got := e.Data(second.Status.ExportRef); got["run"] != deployer.RunID(second.UID, second.Generation, second.Status.LastReconcileTime) {
		t.Fatalf("exports %v: want the run id of the second pickup", got)
	}
}

func TestDeployer_AbortStopsTheRunAndFailsTheItem(t *testing.T) {
	r := newRecorder()
	e := start(t, r)
	r.item(e, "x")
	e.WaitItem("x", "picked up", func(d api.DeployItem) bool { return d.Status.Phase == api.DeployProgressing })
	e.Patch(api.KindDeployItem, "x", `{"metadata":{"annotations":{"cairn.dev/operation":"abort"}}}`)
	e.WaitItem("x", "aborted", func(d api.DeployItem) bool {
		_, asked := d.Annotations[api.AnnotationOperation]
		return !asked && d.Status.Phase == api.DeployFailed && d.Status.LastError != nil && d.Status.LastError.Reason == "Aborted" &&
			d.Status.ObservedGeneration == d.Generation
	})
	if _, aborts := r.counts(); aborts != 1 {
		t.Fatalf("%d aborts, want 1", aborts)
	}
}

func TestDeployer_DeletionUninstallsUnlessDeleteWithoutUninstall(t *testing.T) {
	r := newRecorder()
	e := start(t, r)
	r.release("x")
	r.release("y")
	r.item(e, "x")
	r.item(e, "y")
	for _, n := range []string{"x", "y"} {
		e.WaitItem(n, "Succeeded", func(d api.DeployItem) bool { return d.Status.Phase == api.DeploySucceeded })
	}
	e.Delete(api.KindDeployItem, "x")
	e.WaitGone(api.KindDeployItem, "x")
	if r.uninstalls("x") == 0 {
		t.Fatal("x went without its uninstall")
	}
	e.Patch(api.KindDeployItem, "y", `{"metadata":{"annotations":{"cairn.dev/delete-without-uninstall":"true"}}}`)
	e.Delete(api.KindDeployItem, "y")
	e.WaitGone(api.KindDeployItem, "y")
	if n := r.uninstalls("y"); n != 0 {
		t.Fatalf("%d uninstalls of y, deleted without uninstall", n)
	}
	testkit.Eventually(t, deploytest.Wait, "the exports of x collected with it", func() bool {
		_, err := e.C.Get(e.Ctx(), api.KindDataObject, deploytest.NS, deployer.ExportName("x"))
		return err != nil
	})
}

func TestDeployer_MissingTargetFailsTheItemNamingIt(t *testing.T) {
	r := newRecorder()
	e := start(t, r)
	r.release("x")
	e.Create(deploytest.Object(api.KindDeployItem, "x", &api.DeployItem{Spec: api.DeployItemSpec{Type: "rec", Target: "cluster-a"}}))
	d := e.WaitItem("x", "failed", func(d api.DeployItem) bool { return d.Status.Phase == api.DeployFailed })
	if d.Status.LastError == nil || d.Status.LastError.Reason != api.ReasonTargetNotFound || !strings.Contains(d.Status.LastError.Message, "cluster-a") {
		t.Fatalf("lastError %+v: want TargetNotFound naming cluster-a", d.Status.LastError)
	}
	if runs, _ := r.counts(); runs != 0 {
		t.Fatalf("%d runs without a target", runs)
	}
}

func TestDeployer_AbortDuringTheUninstallFailsTheItemNamingTheWayOut(t *testing.T) {
	r := newRecorder()
	r.hangDelete = map[string]bool{"x": true}
	e := start(t, r)
	r.release("x")
	r.item(e, "x")
	e.WaitItem("x", "Succeeded", func(d api.DeployItem) bool { return d.Status.Phase == api.DeploySucceeded })
	e.Delete(api.KindDeployItem, "x")
	e.WaitItem("x", "Deleting", func(d api.DeployItem) bool { return d.Status.Phase == api.DeployDeleting })
	e.Patch(api.KindDeployItem, "x", `{"metadata":{"annotations":{"cairn.dev/operation":"abort"}}}`)
	d := e.WaitItem("x", "the uninstall aborted", func(d api.DeployItem) bool {
		_, asked := d.Annotations[api.AnnotationOperation]
		return !asked && d.Status.Phase == api.DeployFailed && d.Status.LastError != nil
	})
	if e := d.Status.LastError; e.Reason != api.ReasonUninstallFailed || !strings.Contains(e.Message, api.AnnotationDeleteWithoutUninstall) {
		t.Fatalf("lastError %+v: want %s naming %s", e, api.ReasonUninstallFailed, api.AnnotationDeleteWithoutUninstall)
	}
	if _, aborts := r.counts(); aborts != 1 {
		t.Fatalf("%d aborts, want 1", aborts)
	}
	e.Patch(api.KindDeployItem, "x", `{"metadata":{"annotations":{"cairn.dev/delete-without-uninstall":"true"}}}`)
	e.WaitGone(api.KindDeployItem, "x")
}

package execution_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer"
	"cairn.dev/cairn/deployer/mock"
	"cairn.dev/cairn/execution"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/manager"
)

// failingUninstall is a deployer of type "sticky" whose work succeeds at
// once and whose uninstall fails.
type failingUninstall struct{}

func (failingUninstall) Reconcile(context.Context, *deployer.Item) (deployer.Outcome, error) {
	return deployer.Succeeded(nil), nil
}
func (failingUninstall) Abort(context.Context, *deployer.Item) error { return nil }
func (failingUninstall) Delete(context.Context, *deployer.Item) (deployer.Outcome, error) {
	return deployer.Failed("Uninstall", "the target refused: exit status 3"), nil
}

func start(t *testing.T) *deploytest.Env {
	return deploytest.Start(t, deploytest.Options{},
		manager.Controller{Name: "execution", Setup: func(tm *manager.Term) error { return execution.Setup(tm, execution.Options{}) }},
		manager.Controller{Name: "deployer-mock", Setup: mock.Setup},
		manager.Controller{Name: "deployer-sticky", Setup: func(tm *manager.Term) error {
			return deployer.Setup(tm, deployer.Options{Type: "sticky", Deployer: failingUninstall{}, Stateless: true})
		}},
	)
}

// threeItems: a exports a port; b and c depend on a.
func threeItems() []api.DeployItemTemplate {
	return []api.DeployItemTemplate{
		deploytest.Mock("a", `{"export":{"port":5432}}`),
		deploytest.Mock("b", `{"export":{"url":"b.local"}}`, "a"),
		deploytest.Mock("c", `{}`, "a"),
	}
}

// watchOrder records, in the order of the store's revisions, when each
// deploy item is created ("created b") and first up to date in phase
// Succeeded ("a succeeded"), until stop is called.
func watchOrder(t *testing.T, e *deploytest.Env) (stop func() []string) {
	t.Helper()
	w, err := e.C.Watch(e.Ctx(), api.KindDeployItem, deploytest.NS, api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		succeeded := map[string]bool{}
		for ev := range w.Events() {
			n := ev.Object.Labels[api.LabelDeployItemName]
			if ev.Type == api.Added {
				order = append(order, "created "+n)
			}
			var d api.DeployItem
			if ev.Object.Into(&d) == nil && !succeeded[n] && d.Status.Phase == api.DeploySucceeded && d.Status.ObservedGeneration == d.Generation {
				succeeded[n] = true
				order = append(order, n+" succeeded")
			}
		}
	}()
	return func() []string { w.Stop(); <-done; return order }
}

func TestExecution_ConvergesAndCollectsExportsWhenAllSucceeded(t *testing.T) {
	e := start(t)
	stop := watchOrder(t, e)
	e.Execution("app", threeItems())
	x := e.WaitExecution("app", api.DeploySucceeded)
	order := stop()
	if x.Status.Ready != "3/3" || x.Status.ExportRef == "" || !x.HasFinalizer(api.FinalizerExecution) {
		t.Fatalf("status %+v finalizers %v: want 3/3 ready, an exportRef and the finalizer", x.Status, x.Finalizers)
	}
	got := e.Data(x.Status.ExportRef)
	want := map[string]any{"a": map[string]any{"port": 5432.0}, "b": map[string]any{"url": "b.local"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("exports %v, want %v", got, want)
	}
	for _, name := range []string{"a", "b", "c"} {
		d, ok := deploytest.Get[api.DeployItem](e, api.KindDeployItem, "app-"+name)
		if !ok {
			t.Fatalf("deploy item app-%s missing", name)
		}
		cr := d.ControllerRef()
		if cr == nil || cr.Kind != api.KindExecution || cr.UID != x.UID || d.Labels[api.LabelExecution] != "app" ||
			d.Labels[api.LabelDeployItemName] != name || d.Annotations[api.AnnotationReconcileTime] == "" {
			t.Fatalf("deploy item %s: owner %+v labels %v annotations %v", name, cr, d.Labels, d.Annotations)
		}
	}
	// b and c are created only once a succeeded (in the order of the
	// store's revisions, which one watch reports).
	pos := func(s string) int { return slices.Index(order, s) }
	if pos("a succeeded") < 0 || pos("created b") < pos("a succeeded") || pos("created c") < pos("a succeeded") {
		t.Fatalf("order %v: want b and c created only after a succeeded", order)
	}
}

func TestExecution_FailedItemFailsExecution(t *testing.T) {
	e := start(t)
	e.Execution("app", []api.DeployItemTemplate{
		deploytest.Mock("a", `{}`),
		deploytest.Mock("b", `{"phase":"Failed"}`, "a"),
		deploytest.Mock("c", `{}`, "b"),
	})
	x := e.WaitExecution("app", api.DeployFailed)
	if x.Status.LastError == nil || !strings.Contains(x.Status.LastError.Message, "b failed: MockFailed") || x.Status.ExportRef != "" {
		t.Fatalf("status %+v: want lastError naming b and its error, no exportRef", x.Status)
	}
	if _, ok := deploytest.Get[api.DeployItem](e, api.KindDeployItem, "app-c"); ok {
		t.Fatal("c, which depends on the failed b, was created")
	}
	e.WaitExplain(api.KindExecution, "app", "deploy item b failed: MockFailed")
	e.WaitExplain(api.KindDeployItem, "app-b", "Failed: MockFailed")
}

func TestExecution_ItemDeletedByHandIsPutBack(t *testing.T) {
	e := start(t)
	e.Execution("app", threeItems())
	e.WaitExecution("app", api.DeploySucceeded)
	old, _ := deploytest.Get[api.DeployItem](e, api.KindDeployItem, "app-b")
	e.Delete(api.KindDeployItem, "app-b")
	e.WaitItem("app-b", "recreated and succeeded", func(d api.DeployItem) bool {
		return d.UID != old.UID && d.Status.Phase == api.DeploySucceeded && d.Status.ObservedGeneration == d.Generation
	})
	e.WaitExecution("app", api.DeploySucceeded)
	e.WaitExplain(api.KindExecution, "app", "deploy item b: class 2A (missing)")
}

func TestExecution_ItemEditedByHandIsPutBack(t *testing.T) {
	e := start(t)
	e.Execution("app", threeItems())
	e.WaitExecution("app", api.DeploySucceeded)
	e.Patch(api.KindDeployItem, "app-c", `{"spec":{"config":{"phase":"Failed"}}}`)
	d := e.WaitItem("app-c", "put back", func(d api.DeployItem) bool {
		return string(d.Spec.Config) == `{}` && d.Generation >= 3 && d.Status.Phase == api.DeploySucceeded &&
			d.Status.ObservedGeneration == d.Generation
	})
	// The execution was Succeeded before the edit too: wait for the
	// reconcile that saw c put back, which records c's new generation.
	testkit.EventuallyNil(t, deploytest.Wait, "the execution records c's generation", func() error {
		x, _ := deploytest.Get[api.Execution](e, api.KindExecution, "app")
		for _, ref := range x.Status.DeployItems {
			if ref.Name == "c" && ref.DeployItemGeneration != d.Generation {
				return fmt.Errorf("status records generation %d of c, which is at %d", ref.DeployItemGeneration, d.Generation)
			}
		}
		if x.Status.Phase != api.DeploySucceeded {
			return fmt.Errorf("execution %s, want Succeeded", x.Status.Phase)
		}
		return nil
	})
	e.WaitExplain(api.KindExecution, "app", "deploy item c was changed by someone else")
}

func TestExecution_SpecChangeUpdatesItemsAndCleansUpOrphans(t *testing.T) {
	e := start(t)
	e.Execution("app", threeItems())
	x := e.WaitExecution("app", api.DeploySucceeded)
	x.Spec.DeployItems = []api.DeployItemTemplate{deploytest.Mock("a", `{"export":{"port":6543}}`), deploytest.Mock("b", `{}`, "a")}
	obj, _ := api.FromResource(&x)
	if _, err := e.C.Update(e.Ctx(), obj); err != nil {
		t.Fatal(err)
	}
	e.WaitGone(api.KindDeployItem, "app-c")
	x = e.WaitExecution("app", api.DeploySucceeded)
	if got := e.Data(x.Status.ExportRef); !reflect.DeepEqual(got, map[string]any{"a": map[string]any{"port": 6543.0}}) {
		t.Fatalf("exports %v after the change", got)
	}
	e.WaitExplain(api.KindExecution, "app", "deleted orphaned deploy item app-c")
}

func TestExecution_ForceReconcileRerunsEveryItem(t *testing.T) {
	e := start(t)
	e.Execution("app", threeItems())
	e.WaitExecution("app", api.DeploySucceeded)
	before := map[string]time.Time{}
	for _, n := range []string{"a", "b", "c"} {
		d, _ := deploytest.Get[api.DeployItem](e, api.KindDeployItem, "app-"+n)
		before[n] = d.Status.LastReconcileTime
	}
	e.Patch(api.KindExecution, "app", `{"metadata":{"annotations":{"cairn.dev/operation":"force-reconcile"}}}`)
	for _, n := range []string{"a", "b", "c"} {
		e.WaitItem("app-"+n, "run again", func(d api.DeployItem) bool {
			return d.Status.LastReconcileTime.After(before[n]) && d.Status.Phase == api.DeploySucceeded
		})
	}
	x := e.WaitExecution("app", api.DeploySucceeded)
	if _, ok := x.Annotations[api.AnnotationOperation]; ok {
		t.Fatalf("the operation annotation stays: %v", x.Annotations)
	}
	e.WaitExplain(api.KindExecution, "app", "class 2A (force-reconcile)")
}

func TestExecution_DeletionGoesInReverseDependsOnOrder(t *testing.T) {
	e := start(t)
	e.Execution("app", []api.DeployItemTemplate{
		deploytest.Mock("a", `{}`),
		deploytest.Mock("b", `{}`, "a"),
		deploytest.Mock("c", `{}`, "b"),
	})
	e.WaitExecution("app", api.DeploySucceeded)
	w, err := e.C.Watch(e.Ctx(), api.KindDeployItem, deploytest.NS, api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	var order []string // "mark x" when x gets its deletion timestamp, "gone x" when it is gone
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := map[string]bool{}
		for ev := range w.Events() {
			n := ev.Object.Labels[api.LabelDeployItemName]
			mu.Lock()
			if ev.Object.DeletionTimestamp != nil && !seen[n] {
				seen[n] = true
				order = append(order, "mark "+n)
			}
			if ev.Type == api.Deleted {
				order = append(order, "gone "+n)
			}
			mu.Unlock()
		}
	}()
	e.Delete(api.KindExecution, "app")
	e.WaitGone(api.KindExecution, "app")
	w.Stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	pos := func(s string) int { return slices.Index(order, s) }
	if pos("mark c") < 0 || pos("gone c") > pos("mark b") || pos("gone b") > pos("mark a") || pos("gone a") < 0 {
		t.Fatalf("deletion order %v: want c, then b, then a, each gone before the next is deleted", order)
	}
}

func TestExecution_FailedItemDeletionFailsExecutionUntilDeletedWithoutUninstall(t *testing.T) {
	e := start(t)
	e.Execution("app", []api.DeployItemTemplate{
		deploytest.Mock("a", `{}`),
		{Name: "b", Type: "sticky", DependsOn: []string{"a"}},
	})
	e.WaitExecution("app", api.DeploySucceeded)
	e.Delete(api.KindExecution, "app")
	testkit.EventuallyNil(t, deploytest.Wait, "execution Failed by b's deletion", func() error {
		x := e.GetExecution("app")
		if x.Status.Phase != api.DeployFailed || x.Status.LastError == nil ||
			!strings.Contains(x.Status.LastError.Message, "deletion of deploy item b failed: UninstallFailed: the target refused") {
			return fmt.Errorf("status %+v", x.Status)
		}
		return nil
	})
	if _, ok := deploytest.Get[api.DeployItem](e, api.KindDeployItem, "app-a"); !ok {
		t.Fatal("a was deleted while b, which depends on it, remains")
	}
	e.WaitExplain(api.KindDeployItem, "app-b", "the uninstall failed")
	e.Patch(api.KindExecution, "app", `{"metadata":{"annotations":{"cairn.dev/delete-without-uninstall":"true"}}}`)
	e.WaitGone(api.KindExecution, "app")
	e.WaitGone(api.KindDeployItem, "app-a")
	e.WaitGone(api.KindDeployItem, "app-b")
}

func TestExecution_ItemNoDeployerHandlesWaitsInWork(t *testing.T) {
	e := start(t)
	e.Execution("app", []api.DeployItemTemplate{{Name: "a", Type: "nobody", Config: json.RawMessage(`{}`)}})
	e.WaitItem("app-a", "created with a pending pickup since its reconcile-time", func(d api.DeployItem) bool {
		_, err := time.Parse(time.RFC3339, d.Annotations[api.AnnotationReconcileTime])
		return d.Status.ObservedGeneration == 0 && err == nil
	})
	e.WaitExplain(api.KindExecution, "app", "waiting for a deployer to pick it up")
	if x := e.GetExecution("app"); x.Status.Phase != api.DeployProgressing {
		t.Fatalf("phase %s, want Progressing while the item waits", x.Status.Phase)
	}
}

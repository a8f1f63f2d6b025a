package execution

import (
	"slices"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
)

func exec(gen, observed int64, phase api.DeployPhase, annotations map[string]string, finalizers ...string) *api.Execution {
	e := &api.Execution{ObjectMeta: api.ObjectMeta{Name: "e", Generation: gen, Annotations: annotations, Finalizers: finalizers}}
	e.Status.ObservedGeneration, e.Status.Phase = observed, phase
	return e
}

func TestBegin_ChoosesTheSeedsOperation(t *testing.T) {
	now := time.Now()
	deleting := exec(1, 1, api.DeploySucceeded, nil, api.FinalizerExecution)
	deleting.DeletionTimestamp = &now
	ignoredDeleting := exec(1, 1, api.DeployFailed, map[string]string{api.AnnotationIgnore: "true"})
	ignoredDeleting.DeletionTimestamp = &now
	for _, tc := range []struct {
		name      string
		e         *api.Execution
		op        Operation
		finalizer bool
		force     bool
	}{
		{"ignored and completed", exec(2, 1, api.DeploySucceeded, map[string]string{api.AnnotationIgnore: "true"}), OpIgnore, false, false},
		{"ignored and failed, even deleting", ignoredDeleting, OpIgnore, false, false},
		{"ignored but in work", exec(1, 1, api.DeployProgressing, map[string]string{api.AnnotationIgnore: "true"}, api.FinalizerExecution), OpReconcile, false, false},
		{"new: finalizer and reconcile", exec(1, 0, "", nil), OpReconcile, true, false},
		{"deleting: no finalizer added", deleting, OpDelete, false, false},
		{"status not up to date", exec(3, 2, api.DeploySucceeded, nil, api.FinalizerExecution), OpReconcile, false, false},
		{"phase not completed", exec(2, 2, api.DeployProgressing, nil, api.FinalizerExecution), OpReconcile, false, false},
		{"reconcile annotation", exec(2, 2, api.DeploySucceeded, map[string]string{api.AnnotationOperation: api.OperationReconcile}, api.FinalizerExecution), OpReconcile, false, false},
		{"force-reconcile annotation", exec(2, 2, api.DeployFailed, map[string]string{api.AnnotationOperation: api.OperationForceReconcile}, api.FinalizerExecution), OpReconcile, false, true},
		{"completed and up to date: re-check", exec(2, 2, api.DeploySucceeded, nil, api.FinalizerExecution), OpRecheck, false, false},
		{"failed and up to date: re-check", exec(2, 2, api.DeployFailed, nil, api.FinalizerExecution), OpRecheck, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Begin(tc.e)
			if s.Op != tc.op || s.AddFinalizer != tc.finalizer || s.Force != tc.force {
				t.Fatalf("Begin = %+v, want op %s, finalizer %v, force %v", s, tc.op, tc.finalizer, tc.force)
			}
			if s.Reason == "" {
				t.Fatal("no reason given")
			}
		})
	}
}

// spec: a; b and c depend on a.
var spec = []api.DeployItemTemplate{
	{Name: "a", Type: "mock"},
	{Name: "b", Type: "mock", DependsOn: []string{"a"}},
	{Name: "c", Type: "mock", DependsOn: []string{"a"}},
}

func item(name string, gen, observed int64, phase api.DeployPhase) *Item {
	return &Item{Name: name, Ref: "e-" + name, Generation: gen, ObservedGeneration: observed, Phase: phase}
}

func refs(gen int64, items ...*Item) []api.DeployItemRef {
	var out []api.DeployItemRef
	for _, it := range items {
		out = append(out, api.DeployItemRef{Name: it.Name, Ref: it.Ref, ExecutionGeneration: gen, DeployItemGeneration: it.Generation})
	}
	return out
}

func byName(items ...*Item) map[string]*Item {
	m := map[string]*Item{}
	for _, it := range items {
		m[it.Name] = it
	}
	return m
}

func classes(p ReconcilePlan) string {
	var s []string
	for _, pair := range p.Pairs {
		s = append(s, pair.Template.Name+":"+string(pair.Class))
	}
	return strings.Join(s, " ")
}

func TestPlanReconcile_ClassesAndOutcomes(t *testing.T) {
	aOK, bOK, cOK := item("a", 1, 1, api.DeploySucceeded), item("b", 1, 1, api.DeploySucceeded), item("c", 1, 1, api.DeploySucceeded)
	bFailed := item("b", 1, 1, api.DeployFailed)
	bFailed.LastError = &api.LastError{Reason: "MockFailed", Message: "boom"}
	aWorking := item("a", 1, 1, api.DeployProgressing)
	aStale := item("a", 2, 1, api.DeploySucceeded)
	aPending := item("a", 1, 1, api.DeploySucceeded)
	aPending.Pending = true
	aDeleting := item("a", 1, 1, api.DeploySucceeded)
	aDeleting.Deleting = true
	orphan := item("old", 1, 1, api.DeploySucceeded)
	for _, tc := range []struct {
		name    string
		items   map[string]*Item
		refs    []api.DeployItemRef
		force   bool
		classes string
		phase   api.DeployPhase
		update  []string
		orphans []string
		reason  string
	}{
		{name: "nothing exists: a is 2A, b and c wait for it (2B)", items: byName(), classes: "a:2A b:2B c:2B",
			phase: api.DeployProgressing, update: []string{"a"}, reason: "b 2B"},
		{name: "all succeeded and up to date: 1A, Succeeded", items: byName(aOK, bOK, cOK), refs: refs(5, aOK, bOK, cOK),
			classes: "a:1A b:1A c:1A", phase: api.DeploySucceeded, reason: "class 1A"},
		{name: "one failed: 1B, Failed naming it and its error", items: byName(aOK, bFailed, cOK), refs: refs(5, aOK, bFailed, cOK),
			classes: "a:1A b:1B c:1A", phase: api.DeployFailed, reason: "b failed: MockFailed: boom"},
		{name: "a in work (1C): b and c wait (2B)", items: byName(aWorking), refs: refs(5, aWorking),
			classes: "a:1C b:2B c:2B", phase: api.DeployProgressing, reason: "in work: phase Progressing"},
		{name: "status not up to date is in work (1C)", items: byName(aStale, bOK, cOK), refs: refs(5, aStale, bOK, cOK),
			classes: "a:1C b:1A c:1A", phase: api.DeployProgressing, reason: "status not up to date"},
		{name: "a pickup pending is in work (1C)", items: byName(aPending, bOK, cOK), refs: refs(5, aPending, bOK, cOK),
			classes: "a:1C b:1A c:1A", phase: api.DeployProgressing, reason: "waiting for a deployer"},
		{name: "a succeeded: b and c have no pending dependencies (2A)", items: byName(aOK), refs: refs(5, aOK),
			classes: "a:1A b:2A c:2A", phase: api.DeployProgressing, update: []string{"b", "c"}},
		{name: "execution generation changed: every item is 2", items: byName(aOK, bOK, cOK), refs: refs(4, aOK, bOK, cOK),
			classes: "a:2A b:2B c:2B", phase: api.DeployProgressing, update: []string{"a"}},
		{name: "item changed by someone else: 2A", items: byName(item("a", 2, 2, api.DeploySucceeded), bOK, cOK), refs: refs(5, aOK, bOK, cOK),
			classes: "a:2A b:1A c:1A", phase: api.DeployProgressing, update: []string{"a"}},
		{name: "force-reconcile: every item is 2", items: byName(aOK, bOK, cOK), refs: refs(5, aOK, bOK, cOK), force: true,
			classes: "a:2A b:2B c:2B", phase: api.DeployProgressing, update: []string{"a"}},
		{name: "an item being deleted waits (1C)", items: byName(aDeleting, bOK, cOK), refs: refs(5, aDeleting, bOK, cOK),
			classes: "a:1C b:1A c:1A", phase: api.DeployProgressing, reason: "put back once gone"},
		{name: "orphans are listed", items: byName(aOK, bOK, cOK, orphan), refs: refs(5, aOK, bOK, cOK),
			classes: "a:1A b:1A c:1A", phase: api.DeploySucceeded, orphans: []string{"old"}},
		{name: "failure wins over work to do", items: byName(bFailed), refs: refs(5, bFailed),
			classes: "a:2A b:1B c:2B", phase: api.DeployFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanReconcile(spec, tc.items, tc.refs, 5, tc.force)
			if got := classes(p); got != tc.classes {
				t.Errorf("classes %s, want %s", got, tc.classes)
			}
			if p.Phase != tc.phase || !slices.Equal(p.Update, tc.update) {
				t.Errorf("phase %s update %v, want %s %v", p.Phase, p.Update, tc.phase, tc.update)
			}
			if p.CollectExports != (tc.phase == api.DeploySucceeded) {
				t.Errorf("collect exports %v with phase %s", p.CollectExports, p.Phase)
			}
			var orphans []string
			for _, o := range p.Orphans {
				orphans = append(orphans, o.Name)
			}
			if !slices.Equal(orphans, tc.orphans) {
				t.Errorf("orphans %v, want %v", orphans, tc.orphans)
			}
			if !strings.Contains(p.Reason, tc.reason) {
				t.Errorf("reason %q does not say %q", p.Reason, tc.reason)
			}
		})
	}
}

func TestPlanReconcile_EmptySpecSucceeds(t *testing.T) {
	if p := PlanReconcile(nil, byName(), nil, 1, false); p.Phase != api.DeploySucceeded || !p.CollectExports {
		t.Fatalf("plan %+v, want Succeeded with exports", p)
	}
}

func TestRecheck_FindsChangesOrCombinesPhases(t *testing.T) {
	aOK, bOK, cOK := item("a", 1, 1, api.DeploySucceeded), item("b", 1, 1, api.DeploySucceeded), item("c", 1, 1, api.DeploySucceeded)
	bFailed := item("b", 1, 1, api.DeployFailed)
	bRerun := item("b", 1, 1, api.DeployProgressing)
	bDeleting := item("b", 1, 1, api.DeploySucceeded)
	bDeleting.Deleting = true
	good := refs(5, aOK, bOK, cOK)
	for _, tc := range []struct {
		name      string
		items     map[string]*Item
		refs      []api.DeployItemRef
		phase     api.DeployPhase
		reconcile bool
		combined  api.DeployPhase
		collect   bool
		reason    string
	}{
		{name: "an item was deleted by hand", items: byName(aOK, cOK), refs: good, phase: api.DeploySucceeded, reconcile: true, reason: "b is missing"},
		{name: "an item is being deleted by hand", items: byName(aOK, bDeleting, cOK), refs: good, phase: api.DeploySucceeded, reconcile: true, reason: "being deleted"},
		{name: "an item was edited by hand", items: byName(aOK, item("b", 2, 2, api.DeploySucceeded), cOK), refs: good,
			phase: api.DeploySucceeded, reconcile: true, reason: "b was changed by someone else (generation 2, recorded 1)"},
		{name: "an orphan appeared", items: byName(aOK, bOK, cOK, item("x", 1, 1, api.DeploySucceeded)), refs: good,
			phase: api.DeploySucceeded, reconcile: true, reason: "orphaned"},
		{name: "unchanged and same phase", items: byName(aOK, bOK, cOK), refs: good, phase: api.DeploySucceeded, combined: api.DeploySucceeded},
		{name: "an item failed since", items: byName(aOK, bFailed, cOK), refs: good, phase: api.DeploySucceeded, combined: api.DeployFailed},
		{name: "an item runs again", items: byName(aOK, bRerun, cOK), refs: good, phase: api.DeploySucceeded, combined: api.DeployProgressing},
		{name: "succeeded again: collect exports", items: byName(aOK, bOK, cOK), refs: good, phase: api.DeployFailed,
			combined: api.DeploySucceeded, collect: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Recheck(spec, tc.items, tc.refs, 5, tc.phase)
			if r.Reconcile != tc.reconcile || (!tc.reconcile && (r.Phase != tc.combined || r.CollectExports != tc.collect)) {
				t.Fatalf("Recheck = %+v, want reconcile %v combined %s collect %v", r, tc.reconcile, tc.combined, tc.collect)
			}
			if !strings.Contains(r.Reason, tc.reason) {
				t.Fatalf("reason %q does not say %q", r.Reason, tc.reason)
			}
		})
	}
}

func TestPlanDelete_ReverseDependsOnOrder(t *testing.T) {
	del := func(it *Item) *Item { c := *it; c.Deleting = true; return &c }
	a, b, c := item("a", 1, 1, api.DeploySucceeded), item("b", 1, 1, api.DeploySucceeded), item("c", 1, 1, api.DeploySucceeded)
	bFailed := del(item("b", 1, 1, api.DeployFailed))
	bFailed.LastError = &api.LastError{Reason: "UninstallFailed", Message: "exit status 3"}
	bDeployFailed := del(item("b", 1, 1, api.DeployFailed))
	bDeployFailed.LastError = &api.LastError{Reason: "MockFailed", Message: "asked to fail"}
	bAbortTimedOut := del(item("b", 1, 1, api.DeployFailed))
	bAbortTimedOut.LastError = &api.LastError{Reason: api.ReasonAbortingTimeout, Message: "no abort within 5m"}
	for _, tc := range []struct {
		name    string
		items   map[string]*Item
		gone    bool
		delete  []string
		waiting string
		phase   api.DeployPhase
		reason  string
	}{
		{name: "all gone: remove the finalizer", items: byName(), gone: true, phase: api.DeployDeleting},
		{name: "dependents first", items: byName(a, b, c), delete: []string{"b", "c"}, waiting: "a: waits until b, c", phase: api.DeployDeleting},
		{name: "a waits while c is deleting", items: byName(a, del(c)), waiting: "c: deleting, waits for its deployer", phase: api.DeployDeleting},
		{name: "a goes once its dependents are gone", items: byName(a), delete: []string{"a"}, phase: api.DeployDeleting},
		{name: "a failed deletion fails the execution, naming the item", items: byName(a, bFailed, del(c)), phase: api.DeployFailed,
			reason: "deletion of deploy item b failed: UninstallFailed: exit status 3"},
		{name: "a deploy failure of a deleting item is no deletion failure", items: byName(a, bDeployFailed), phase: api.DeployDeleting,
			waiting: "b: deleting after its deploy failed; waits for its deployer to start the uninstall"},
		{name: "an abort that timed out fails the deletion", items: byName(a, bAbortTimedOut), phase: api.DeployFailed,
			reason: "deletion of deploy item b failed: AbortingTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanDelete(spec, tc.items)
			var names []string
			for _, it := range p.Delete {
				names = append(names, it.Name)
			}
			if p.Gone != tc.gone || !slices.Equal(names, tc.delete) || p.Phase != tc.phase {
				t.Fatalf("PlanDelete = gone %v delete %v phase %s, want %v %v %s", p.Gone, names, p.Phase, tc.gone, tc.delete, tc.phase)
			}
			if !strings.Contains(strings.Join(p.Waiting, "\n"), tc.waiting) || !strings.Contains(p.Reason, tc.reason) {
				t.Fatalf("waiting %q reason %q; want %q and %q", p.Waiting, p.Reason, tc.waiting, tc.reason)
			}
		})
	}
}

func TestItemName_BoundedAndStable(t *testing.T) {
	long := strings.Repeat("x", 60)
	n := ItemName(long, "item")
	if len(n) > 63 || n != ItemName(long, "item") || n == ItemName(long, "other") {
		t.Fatalf("ItemName = %q: want at most 63 characters, stable, distinct per item", n)
	}
	if ItemName("e", "a") != "e-a" {
		t.Fatalf("short names are kept: %q", ItemName("e", "a"))
	}
}

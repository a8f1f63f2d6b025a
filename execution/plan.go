package execution

import (
	"fmt"
	"slices"
	"strings"

	"cairn.dev/cairn/api"
)

// The decisions of the execution controller, over plain data: which
// operation a reconcile performs (Begin), how the deploy items of a
// reconcile operation are classified and what follows (PlanReconcile),
// whether a re-check finds a reason to reconcile (Recheck), and what a
// deletion does next (PlanDelete). The reconciler (reconciler.go) only
// reads, calls these and writes.

// Operation is what a reconcile run of an execution does.
type Operation string

// The operations of the seed's "Main Operations".
const (
	// OpIgnore: the ignore annotation on a completed execution; nothing.
	OpIgnore Operation = "ignore"
	// OpDelete: the execution has a deletion timestamp.
	OpDelete Operation = "delete"
	// OpReconcile: status not up to date, phase not completed, or a
	// reconcile or force-reconcile annotation.
	OpReconcile Operation = "reconcile"
	// OpRecheck: everything seems done; re-check the deploy items.
	OpRecheck Operation = "re-check"
)

// Start is the outcome of the seed's initial tasks and of the choice of
// the main operation.
type Start struct {
	Op Operation
	// AddFinalizer: the execution is live and lacks the controller's
	// finalizer.
	AddFinalizer bool
	// Force: a force-reconcile annotation asks to treat every deploy item
	// as needing an update.
	Force bool
	// Reason says why Op was chosen, in the seed's words.
	Reason string
}

// Begin performs the seed's initial tasks and main-operation choice for e.
func Begin(e *api.Execution) Start {
	op := e.Annotations[api.AnnotationOperation]
	if e.Annotations[api.AnnotationIgnore] == "true" && e.Status.Phase.Completed() {
		return Start{Op: OpIgnore, Reason: fmt.Sprintf("ignore annotation set and phase %s is completed", e.Status.Phase)}
	}
	s := Start{AddFinalizer: !e.Deleting() && !e.HasFinalizer(api.FinalizerExecution)}
	upToDate := e.Status.ObservedGeneration == e.Generation
	switch {
	case e.Deleting():
		s.Op, s.Reason = OpDelete, "deletion timestamp set"
	case !upToDate:
		s.Op, s.Reason = OpReconcile, fmt.Sprintf("status not up to date (generation %d, observed %d)", e.Generation, e.Status.ObservedGeneration)
	case !e.Status.Phase.Completed():
		s.Op, s.Reason = OpReconcile, fmt.Sprintf("phase %q is not completed", e.Status.Phase)
	case op == api.OperationReconcile || op == api.OperationForceReconcile:
		s.Op, s.Reason = OpReconcile, fmt.Sprintf("%s annotation set", op)
	default:
		s.Op, s.Reason = OpRecheck, fmt.Sprintf("status up to date, phase %s, no reconcile annotation", e.Status.Phase)
	}
	s.Force = s.Op == OpReconcile && op == api.OperationForceReconcile
	return s
}

// Item is what the controller knows of one deploy item resource it
// manages.
type Item struct {
	// Name is the item's name in the execution spec (its label).
	Name string
	// Ref is the DeployItem's object name.
	Ref                string
	Generation         int64
	ObservedGeneration int64
	Phase              api.DeployPhase
	// Deleting: the item has a deletion timestamp.
	Deleting bool
	// Pending: the item carries a reconcile operation annotation that no
	// deployer has picked up yet.
	Pending   bool
	LastError *api.LastError
	ExportRef string
}

// StatusUpToDate reports whether the item's observed generation is its
// generation.
func (it Item) StatusUpToDate() bool { return it.ObservedGeneration == it.Generation }

// Done reports whether the item's status is up to date, its phase
// completed, and no pickup is pending: the deployer has finished this
// generation.
func (it Item) Done() bool {
	return it.StatusUpToDate() && it.Phase.Completed() && !it.Pending && !it.Deleting
}

// DeletionFailed reports whether the deletion of a deleting item failed:
// its deployer's uninstall failed or was aborted (UninstallFailed), or an
// abort was not carried out in time (AbortingTimeout; the deployer library
// does not start an uninstall over it either). A deleting item still
// Failed from its deploy is not a deletion failure: it waits for its
// deployer to start the uninstall (which writes Deleting), or for good
// while that deployer is down.
func (it Item) DeletionFailed() bool {
	if !it.Deleting || it.Phase != api.DeployFailed || it.LastError == nil {
		return false
	}
	switch it.LastError.Reason {
	case api.ReasonUninstallFailed, api.ReasonAbortingTimeout:
		return true
	}
	return false
}

// Class is one of the seed's classes of (spec item, resource) pairs.
type Class string

// The classes of the seed.
const (
	// Class1A: spec up to date, status up to date, Succeeded.
	Class1A Class = "1A"
	// Class1B: spec up to date, status up to date, Failed.
	Class1B Class = "1B"
	// Class1C: spec up to date, in work.
	Class1C Class = "1C"
	// Class2A: needs an update, no pending dependencies.
	Class2A Class = "2A"
	// Class2B: needs an update, pending dependencies.
	Class2B Class = "2B"
)

// Pair is one deploy item of the spec with its resource (nil when missing)
// and its class.
type Pair struct {
	Template api.DeployItemTemplate
	Item     *Item
	Class    Class
	// Why says, for people, why the pair is in its class.
	Why string
}

// SpecUpToDate reports whether item is spec-up-to-date against ref, the
// generations recorded at its last update, for execution generation gen.
func SpecUpToDate(item *Item, ref *api.DeployItemRef, gen int64) bool {
	return item != nil && ref != nil && ref.ExecutionGeneration == gen && ref.DeployItemGeneration == item.Generation
}

// ReconcilePlan is the outcome of a reconcile operation.
type ReconcilePlan struct {
	// Pairs in spec order.
	Pairs []Pair
	// Orphans are resources with no counterpart in the spec: delete them
	// (those not already deleting).
	Orphans []Item
	// Phase is the execution's phase after this run.
	Phase api.DeployPhase
	// Update names the deploy items (class 2A) to create or update now.
	Update []string
	// CollectExports: every item is in class 1A.
	CollectExports bool
	// Reason says, in the seed's words, why Phase.
	Reason string
}

// PlanReconcile classifies the deploy items of spec against the resources
// (by spec name) and the generations recorded in refs, for execution
// generation gen; force treats every pair as class 2. It follows the
// seed: all 1A → Succeeded with exports; any 1B → Failed; otherwise
// update the 2A items and be Progressing.
func PlanReconcile(spec []api.DeployItemTemplate, items map[string]*Item, refs []api.DeployItemRef, gen int64, force bool) ReconcilePlan {
	var p ReconcilePlan
	inSpec := map[string]bool{}
	for _, t := range spec {
		inSpec[t.Name] = true
	}
	for _, name := range sortedNames(items) {
		if !inSpec[name] {
			p.Orphans = append(p.Orphans, *items[name])
		}
	}
	class := map[string]Class{}
	for _, t := range spec {
		it := items[t.Name]
		pair := Pair{Template: t, Item: it}
		switch {
		case force:
			pair.Class, pair.Why = Class2A, "force-reconcile"
		case it == nil:
			pair.Class, pair.Why = Class2A, "missing"
		case it.Deleting:
			pair.Class, pair.Why = Class1C, "being deleted; put back once gone"
		case !SpecUpToDate(it, refOf(refs, t.Name), gen):
			pair.Class, pair.Why = Class2A, "spec not up to date"
		case it.Done() && it.Phase == api.DeploySucceeded:
			pair.Class, pair.Why = Class1A, "Succeeded"
		case it.Done():
			pair.Class, pair.Why = Class1B, "Failed"
		default:
			pair.Class, pair.Why = Class1C, "in work: "+inWork(it)
		}
		class[t.Name] = pair.Class
		p.Pairs = append(p.Pairs, pair)
	}
	// A dependency is pending unless it is in class 1A.
	for i := range p.Pairs {
		pair := &p.Pairs[i]
		if pair.Class != Class2A {
			continue
		}
		var pending []string
		for _, d := range pair.Template.DependsOn {
			if c, ok := class[d]; ok && c != Class1A {
				pending = append(pending, d)
			}
		}
		if len(pending) > 0 {
			pair.Class = Class2B
			pair.Why += "; waits for " + strings.Join(pending, ", ")
		}
	}
	all1A := true
	var failed []string
	for _, pair := range p.Pairs {
		all1A = all1A && pair.Class == Class1A
		if pair.Class == Class1B {
			failed = append(failed, failure(pair.Item))
		}
	}
	switch {
	case all1A:
		p.Phase, p.CollectExports = api.DeploySucceeded, true
		p.Reason = "all deploy items succeeded (class 1A)"
	case len(failed) > 0:
		p.Phase = api.DeployFailed
		p.Reason = "deploy item " + strings.Join(failed, "; deploy item ")
	default:
		p.Phase = api.DeployProgressing
		for _, pair := range p.Pairs {
			if pair.Class == Class2A {
				p.Update = append(p.Update, pair.Template.Name)
			}
		}
		p.Reason = progressReason(p.Pairs)
	}
	return p
}

// failure describes a failed item: its name and its error.
func failure(it *Item) string {
	if it.LastError == nil {
		return it.Name + " failed"
	}
	return fmt.Sprintf("%s failed: %s: %s", it.Name, it.LastError.Reason, it.LastError.Message)
}

func inWork(it *Item) string {
	switch {
	case it.Pending || it.ObservedGeneration == 0 && it.Phase == "":
		return "waiting for a deployer to pick it up"
	case !it.StatusUpToDate():
		return fmt.Sprintf("status not up to date (generation %d, observed %d)", it.Generation, it.ObservedGeneration)
	default:
		return "phase " + string(it.Phase)
	}
}

// progressReason lists the pairs by class, for the trace and lastError.
func progressReason(pairs []Pair) string {
	var parts []string
	for _, pair := range pairs {
		parts = append(parts, fmt.Sprintf("%s %s (%s)", pair.Template.Name, pair.Class, pair.Why))
	}
	return "Progressing: " + strings.Join(parts, "; ")
}

func refOf(refs []api.DeployItemRef, name string) *api.DeployItemRef {
	for i := range refs {
		if refs[i].Name == name {
			return &refs[i]
		}
	}
	return nil
}

func sortedNames(items map[string]*Item) []string {
	names := make([]string, 0, len(items))
	for n := range items {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// RecheckResult is the outcome of a re-check of the deploy items.
type RecheckResult struct {
	// Reconcile: an item is missing or was changed by someone else; run
	// the reconcile operation.
	Reconcile bool
	// Phase is the combined phase of the items (when not Reconcile).
	Phase api.DeployPhase
	// CollectExports: the combined phase is Succeeded and differs from
	// the execution's phase.
	CollectExports bool
	Reason         string
}

// Recheck checks whether a deploy item of spec is missing or was changed
// by someone else since the controller's last update (its generation is
// not the one recorded in refs); otherwise it computes the combined phase
// of the items against the execution's phase.
func Recheck(spec []api.DeployItemTemplate, items map[string]*Item, refs []api.DeployItemRef, gen int64, phase api.DeployPhase) RecheckResult {
	var phases []api.DeployPhase
	for _, t := range spec {
		it, ref := items[t.Name], refOf(refs, t.Name)
		switch {
		case it == nil:
			return RecheckResult{Reconcile: true, Reason: fmt.Sprintf("deploy item %s is missing", t.Name)}
		case it.Deleting:
			return RecheckResult{Reconcile: true, Reason: fmt.Sprintf("deploy item %s is being deleted by someone else", t.Name)}
		case !SpecUpToDate(it, ref, gen):
			return RecheckResult{Reconcile: true, Reason: fmt.Sprintf("deploy item %s was changed by someone else (generation %d, recorded %d)",
				t.Name, it.Generation, recorded(ref))}
		}
		p := it.Phase
		if !it.Done() {
			p = api.DeployProgressing
		}
		phases = append(phases, p)
	}
	for name := range items {
		if !slices.ContainsFunc(spec, func(t api.DeployItemTemplate) bool { return t.Name == name }) {
			return RecheckResult{Reconcile: true, Reason: fmt.Sprintf("deploy item %s is orphaned", name)}
		}
	}
	c := CombinedPhase(phases)
	r := RecheckResult{Phase: c, Reason: fmt.Sprintf("deploy items unchanged; combined phase %s", c)}
	r.CollectExports = c == api.DeploySucceeded && c != phase
	return r
}

func recorded(ref *api.DeployItemRef) int64 {
	if ref == nil {
		return 0
	}
	return ref.DeployItemGeneration
}

// CombinedPhase combines item phases: Progressing if any is not completed,
// else Failed if any failed, else Succeeded (also for none).
func CombinedPhase(phases []api.DeployPhase) api.DeployPhase {
	failed := false
	for _, p := range phases {
		if !p.Completed() {
			return api.DeployProgressing
		}
		failed = failed || p == api.DeployFailed
	}
	if failed {
		return api.DeployFailed
	}
	return api.DeploySucceeded
}

// DeletePlan is what the delete operation does next.
type DeletePlan struct {
	// Gone: no managed item remains; remove the finalizer.
	Gone bool
	// Delete lists the items to delete now.
	Delete []Item
	// Waiting says, for each remaining item not deleted now, what it
	// waits for.
	Waiting []string
	// Failed lists the deleting items whose deletion failed.
	Failed []Item
	// Phase is Deleting, or Failed when a deletion failed.
	Phase  api.DeployPhase
	Reason string
}

// PlanDelete plans the delete operation: every remaining item is deleted
// except those already deleting and those another remaining item depends
// on (per spec), so items go in reverse dependsOn order; a deleting item
// whose deletion failed (Item.DeletionFailed) fails the execution.
func PlanDelete(spec []api.DeployItemTemplate, items map[string]*Item) DeletePlan {
	if len(items) == 0 {
		return DeletePlan{Gone: true, Phase: api.DeployDeleting, Reason: "all deploy items are gone"}
	}
	p := DeletePlan{Phase: api.DeployDeleting}
	dependents := map[string][]string{}
	for _, t := range spec {
		if items[t.Name] == nil {
			continue
		}
		for _, d := range t.DependsOn {
			dependents[d] = append(dependents[d], t.Name)
		}
	}
	for _, name := range sortedNames(items) {
		it := items[name]
		switch {
		case it.DeletionFailed():
			p.Failed = append(p.Failed, *it)
		case it.Deleting && it.Phase == api.DeployFailed:
			p.Waiting = append(p.Waiting, fmt.Sprintf("%s: deleting after its deploy failed; waits for its deployer to start the uninstall", name))
		case it.Deleting:
			p.Waiting = append(p.Waiting, fmt.Sprintf("%s: deleting, waits for its deployer to uninstall it and remove its finalizer", name))
		case len(dependents[name]) > 0:
			p.Waiting = append(p.Waiting, fmt.Sprintf("%s: waits until %s, which depend on it, are gone", name, strings.Join(dependents[name], ", ")))
		default:
			p.Delete = append(p.Delete, *it)
		}
	}
	if len(p.Failed) > 0 {
		var f []string
		for i := range p.Failed {
			f = append(f, failure(&p.Failed[i]))
		}
		p.Phase = api.DeployFailed
		p.Reason = "deletion of deploy item " + strings.Join(f, "; deletion of deploy item ")
	} else {
		p.Reason = "waiting: " + strings.Join(p.Waiting, "; ")
	}
	return p
}

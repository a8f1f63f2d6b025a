// Package deployer is the shared library of cairn's deployers: one
// controller per deploy item type that follows the deployer contract of
// DESIGN.md, around a Deployer that does the type's work.
//
// The contract, as this library carries it out for every type:
//   - An item is picked up when its status is not up to date
//     (observedGeneration differs from generation) or it carries the
//     reconcile (or force-reconcile) operation annotation. Picking up
//     writes phase Progressing, observedGeneration and lastReconcileTime
//     in one status write, then removes the operation annotation and adds
//     the deployer's finalizer in one metadata write. The work starts
//     only after both, so a run is identified by the item's uid,
//     generation and lastReconcileTime (Item.Run) and a restart resumes
//     it instead of starting it again.
//   - The work ends with the final phase (Succeeded or Failed) and
//     observedGeneration in one status write, with status.exportRef
//     naming a DataObject that holds the exports.
//   - The abort operation annotation stops the work (Deployer.Abort) and
//     fails the item; when the progressing timeout asked for the abort
//     (cairn.dev/abort-timeout), lastError says so.
//   - Deletion runs the uninstall (Deployer.Delete) and then removes the
//     finalizer; with cairn.dev/delete-without-uninstall: "true" the
//     finalizer is removed at once. A failed uninstall leaves the item in
//     phase Failed with lastError saying why, which fails its execution.
package deployer

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// Item is a deploy item as a Deployer sees it.
type Item struct {
	// DeployItem is a private copy: a Deployer may read it freely. It may
	// set Status.ProviderStatus (its record of the work), and, while the
	// work goes on, Status.LastError (why it waits, say); the library
	// writes them with its next status write, or at once when an
	// unfinished Reconcile or Delete changed them.
	*api.DeployItem
	// Target is the item's target, nil when it names none.
	Target *api.Target
	// Run identifies this pickup of the item: it is derived from the
	// item's uid, generation and lastReconcileTime, so it is the same
	// after a restart and differs for every new pickup. It is a valid
	// runtime unit id.
	Run string
	// Notify asks for the item to be reconciled again soon; a Deployer
	// calls it (from any goroutine) when work it waits for has ended. It
	// never blocks.
	Notify func()
	// Record writes the item's status as the Deployer set it (its
	// providerStatus, say) at once, fenced as every write of the term: a
	// Deployer records there what it is about to start outside the store
	// (a run's id) before starting it, and starts nothing when Record
	// fails. It blocks on the API; errors: the API's (NotLeader when the
	// term was lost). Set for Reconcile and Delete; nil elsewhere.
	Record func(ctx context.Context) error

	// c reads the Secrets the config references (ResolveConfig).
	c client.Interface
}

// Outcome is what a Deployer reports about an item's work.
type Outcome struct {
	// Done: the work has ended with Phase (Succeeded or Failed).
	Done  bool
	Phase api.DeployPhase
	// Exports is the JSON the item exports on success; nil: none.
	Exports json.RawMessage
	// Error explains a Failed phase (reason and message; the library
	// stamps the time). Never a secret value.
	Error *api.LastError
	// RequeueAfter, when the work has not ended, asks for another look
	// after this delay; zero waits for Notify.
	RequeueAfter time.Duration
}

// Succeeded is a finished Outcome with exports.
func Succeeded(exports json.RawMessage) Outcome {
	return Outcome{Done: true, Phase: api.DeploySucceeded, Exports: exports}
}

// Failed is a finished Outcome with an error.
func Failed(reason api.ErrorReason, format string, args ...any) Outcome {
	return Outcome{Done: true, Phase: api.DeployFailed, Error: &api.LastError{Reason: reason, Message: fmt.Sprintf(format, args...)}}
}

// InProgress is an unfinished Outcome.
func InProgress(after time.Duration) Outcome { return Outcome{RequeueAfter: after} }

// Deployer does the work of one deploy item type. The library calls it
// for one item at a time (never twice at once for the same item), with
// the context of the controller: methods should return promptly when it
// is done.
type Deployer interface {
	// Reconcile starts or continues the work of item's run (Item.Run) and
	// reports where it is. It must be idempotent: it is called again and
	// again until it reports Done, also after a restart of the process,
	// and must then resume the run, never start it twice. Work of earlier
	// runs of the same item that still goes on must be stopped. A returned
	// error is retried with backoff; a failure of the work itself is an
	// Outcome with Phase Failed.
	Reconcile(ctx context.Context, item *Item) (Outcome, error)
	// Abort stops the work of the item's runs, if any, and blocks until
	// it has stopped. Aborting an item with nothing running is not an
	// error.
	Abort(ctx context.Context, item *Item) error
	// Delete uninstalls the item; like Reconcile it is called until it
	// reports Done, and must be idempotent too (after a Done it may be
	// called again when the process stopped before the finalizer was
	// removed) (Phase Succeeded: uninstalled, the finalizer goes;
	// Failed: the uninstall failed, the item stays with its error), and it
	// must stop the work of every run first.
	Delete(ctx context.Context, item *Item) (Outcome, error)
}

// Forgetter is implemented by Deployers that keep something of an item
// after its uninstall (logs, say): Forget is called once the item's
// finalizer is gone. It may block briefly; an error is only logged.
type Forgetter interface {
	Forget(ctx context.Context, item *Item) error
}

// Package deployitem is the deploy item timeout controller: it watches
// every DeployItem, whatever its type, for the three timeouts of the seed
// landscaper-reconciliation-flow.md ("DeployItems"): pickup (no deployer
// picked the item up), aborting (no deployer carried out an abort) and
// progressing (the deployer works for too long, so an abort is asked
// for). The decision is a pure function of the item, the clock and the
// timeouts (Check); the Reconciler only reads, calls it and writes.
package deployitem

import (
	"fmt"
	"time"

	"cairn.dev/cairn/api"
)

// Timeouts are the timeouts checked; a zero or negative one is not
// configured (not checked).
type Timeouts struct {
	// Pickup: from the execution's reconcile-time annotation until a
	// deployer picks the item up (its lastReconcileTime is not before
	// the annotation's time).
	Pickup time.Duration
	// Aborting: from the abort-time annotation until a deployer has
	// carried out the abort.
	Aborting time.Duration
	// Progressing: from the item's lastReconcileTime until the deployer
	// finishes; a deploy item's spec.timeout overrides it.
	Progressing time.Duration
}

// The default timeouts (the server flags' defaults).
const (
	DefaultPickup      = 5 * time.Minute
	DefaultAborting    = 5 * time.Minute
	DefaultProgressing = 10 * time.Minute
)

// requeueMargin is how long after an expected expiry the item is looked
// at again.
const requeueMargin = 5 * time.Second

// Decision is what Check decides for an item.
type Decision struct {
	// Fail, when set, is the error the item fails with: phase Failed and
	// observedGeneration its generation, in one status write.
	Fail *api.LastError
	// Set are annotations to add (or overwrite); Remove, annotations to
	// remove.
	Set    map[string]string
	Remove []string
	// RequeueAt is when to look again: 5 s after the earliest expected
	// expiry; zero: no timeout pending.
	RequeueAt time.Time
	// Steps say what each check found, in the seed's order, for the trace.
	Steps []string
}

// Check runs the seed's core reconciliation logic of deploy items: the
// pickup, aborting and progressing timeout checks, in that order, each of
// which may end the item's flow, and the earliest requeue time. An item
// being deleted is checked too (Deleting is not final): its uninstall is
// bounded by the progressing timeout, counted from the deletion (or a
// later retry), and an abort that no deployer carries out by the aborting
// timeout.
func Check(d *api.DeployItem, now time.Time, t Timeouts) Decision {
	var dec Decision
	if done := pickup(d, now, t.Pickup, &dec); done {
		return dec
	}
	if done := aborting(d, now, t.Aborting, &dec); done {
		return dec
	}
	progressing(d, now, t, &dec)
	return dec
}

func (dec *Decision) step(format string, args ...any) {
	dec.Steps = append(dec.Steps, fmt.Sprintf(format, args...))
}

func (dec *Decision) requeue(at time.Time) {
	at = at.Add(requeueMargin)
	if dec.RequeueAt.IsZero() || at.Before(dec.RequeueAt) {
		dec.RequeueAt = at
	}
}

func failedWith(d *api.DeployItem, reason api.ErrorReason) bool {
	return d.Status.Phase == api.DeployFailed && d.Status.LastError != nil && d.Status.LastError.Reason == reason
}

// pickup is "Detect Pickup Timeouts"; it reports whether the flow ends.
func pickup(d *api.DeployItem, now time.Time, timeout time.Duration, dec *Decision) bool {
	if timeout <= 0 {
		return false
	}
	raw, ok := d.Annotations[api.AnnotationReconcileTime]
	if !ok {
		if failedWith(d, api.ReasonPickupTimeout) {
			dec.step("pickup: already failed with a pickup timeout")
			return true
		}
		dec.step("pickup: no %s annotation (picked up, or never asked for)", api.AnnotationReconcileTime)
		return false
	}
	at, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		dec.step("pickup: %s annotation %q is not an RFC 3339 time; ignored", api.AnnotationReconcileTime, raw)
		return false
	}
	// A pickup timeout ends the check only for the request it timed out:
	// a later one (a force-reconcile, a spec change, a retry) arms it again.
	if failedWith(d, api.ReasonPickupTimeout) && !d.Status.LastError.Time.Before(at) {
		dec.step("pickup: already failed with a pickup timeout (at %s, asked at %s)",
			d.Status.LastError.Time.UTC().Format(time.RFC3339), raw)
		return true
	}
	if last := d.Status.LastReconcileTime; !last.IsZero() && !last.Before(at) {
		dec.step("pickup: picked up at %s", last.UTC().Format(time.RFC3339))
		return false
	}
	if now.Sub(at) >= timeout {
		dec.Fail = &api.LastError{Reason: api.ReasonPickupTimeout, Message: fmt.Sprintf(
			"no deployer picked up this deploy item of type %q within the pickup timeout of %s (asked at %s): is a deployer for %q running?",
			d.Spec.Type, timeout, raw, d.Spec.Type)}
		if _, ok := d.Annotations[api.AnnotationOperation]; ok {
			dec.Remove = []string{api.AnnotationOperation}
		}
		dec.step("pickup: timed out after %s: no deployer picked it up", timeout)
		return true
	}
	dec.step("pickup: waiting for a deployer since %s (timeout %s)", raw, timeout)
	dec.requeue(at.Add(timeout))
	return false
}

// aborting is "Detect Aborting Timeouts"; it reports whether the flow
// ends.
func aborting(d *api.DeployItem, now time.Time, timeout time.Duration, dec *Decision) bool {
	if timeout <= 0 {
		return false
	}
	if failedWith(d, api.ReasonAbortingTimeout) {
		dec.step("aborting: already failed with an aborting timeout")
		return true
	}
	raw, ok := d.Annotations[api.AnnotationAbortTime]
	if !ok && d.Annotations[api.AnnotationOperation] == api.OperationAbort && !d.Status.Phase.Completed() {
		// An abort asked for without its time: the time is now.
		raw = now.UTC().Format(time.RFC3339)
		dec.Set = map[string]string{api.AnnotationAbortTime: raw}
		ok = true
		dec.step("aborting: abort asked for; recorded %s %s", api.AnnotationAbortTime, raw)
	}
	if !ok || d.Status.Phase.Completed() {
		dec.step("aborting: no abort pending")
		return false
	}
	at, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		dec.step("aborting: %s annotation %q is not an RFC 3339 time; ignored", api.AnnotationAbortTime, raw)
		return false
	}
	if now.Sub(at) >= timeout {
		msg := fmt.Sprintf("the deployer of type %q did not carry out the abort asked at %s within the aborting timeout of %s", d.Spec.Type, raw, timeout)
		if d.Deleting() {
			msg += fmt.Sprintf(" while it uninstalled; annotate %s: \"true\" to delete the item without its uninstall", api.AnnotationDeleteWithoutUninstall)
		}
		dec.Fail = &api.LastError{Reason: api.ReasonAbortingTimeout, Message: msg}
		dec.Set = nil
		dec.Remove = []string{api.AnnotationOperation, api.AnnotationAbortTime, api.AnnotationAbortTimeout}
		dec.step("aborting: timed out after %s", timeout)
		return true
	}
	dec.step("aborting: waiting for the deployer to abort since %s (timeout %s)", raw, timeout)
	dec.requeue(at.Add(timeout))
	return false
}

// progressing is "Detect Progressing Timeouts".
func progressing(d *api.DeployItem, now time.Time, t Timeouts, dec *Decision) {
	timeout := t.Progressing
	if d.Spec.Timeout != nil && d.Spec.Timeout.Duration > 0 {
		timeout = d.Spec.Timeout.Duration
	}
	if timeout <= 0 {
		return
	}
	last := d.Status.LastReconcileTime
	if d.Deleting() && d.DeletionTimestamp.After(last) {
		last = *d.DeletionTimestamp // the uninstall began with the deletion
	}
	if last.IsZero() || d.Status.Phase.Completed() {
		dec.step("progressing: not in progress")
		return
	}
	if d.Annotations[api.AnnotationOperation] == api.OperationAbort {
		dec.step("progressing: an abort is already pending")
		return
	}
	if now.Sub(last) >= timeout {
		if dec.Set == nil {
			dec.Set = map[string]string{}
		}
		dec.Set[api.AnnotationOperation] = api.OperationAbort
		dec.Set[api.AnnotationAbortTime] = now.UTC().Format(time.RFC3339)
		dec.Set[api.AnnotationAbortTimeout] = "true"
		dec.step("progressing: timed out: the deployer works since %s, longer than %s: abort asked for",
			last.Format(time.RFC3339), timeout)
		return
	}
	dec.step("progressing: since %s (timeout %s)", last.Format(time.RFC3339), timeout)
	dec.requeue(last.Add(timeout))
}

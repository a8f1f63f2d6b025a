package cleaner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cleaner/condition"
)

// Action is what a reconcile of a Cleaner does, as Decide chose it.
type Action string

// The actions, one per exit of the seed's reconcile.
const (
	// ActDrop: the Cleaner is gone or being deleted: forget it.
	ActDrop Action = "drop"
	// ActWait: the TTL has not passed: schedule at creation + ttl.
	ActWait Action = "wait"
	// ActDelete: every condition holds: delete the targets marked delete
	// (with uid preconditions), then the Cleaner.
	ActDelete Action = "delete"
	// ActRetry: the conditions do not all hold, or could not be
	// evaluated: schedule the next evaluation at Decision.At.
	ActRetry Action = "retry"
)

// Why a time was chosen, for status and traces.
const (
	WhyTTL       = "creation + ttl"
	WhyMonotonic = "monotonic search: the earliest time every condition holds"
	WhyPeriod    = "retry.period"
	WhyBackoff   = "backoff after a failed evaluation"
	WhyDryRun    = "dry run: nothing deleted; " + WhyPeriod
	WhyStanding  = "a standing capacity rule: " + WhyPeriod
)

// Input is everything Decide looks at. It is plain data but for Resolve,
// which Decide calls only once the TTL has passed (the seed resolves
// targets only then).
type Input struct {
	// Now is the evaluation's time.
	Now time.Time
	// Cleaner is the Cleaner (nil: not found).
	Cleaner *api.Cleaner
	// Programs are the Cleaner's compiled conditions; ProgramsErr is why
	// they did not compile (the spec was admitted by an older cairn).
	Programs    *condition.Set
	ProgramsErr error
	// Resolve reads the targets.
	Resolve func() (Resolution, error)
}

// Decision is what to do and what to write in status.
type Decision struct {
	Action Action
	// At is when to evaluate next (ActWait, ActRetry), and Why says why
	// then (one of the Why constants).
	At  time.Time
	Why string
	// Search says why a monotonic search found no time (the horizon, its
	// time limit, an evaluation that failed), when it did not: the
	// Cleaner's status.lastEvaluation.search and the trace say it.
	Search string
	// Phase is the Cleaner's phase after this decision.
	Phase api.CleanerPhase
	// Resolution is what the targets resolved to (after the TTL).
	Resolution Resolution
	// Evaluated reports whether the conditions were evaluated, and
	// Results holds their outcomes.
	Evaluated bool
	Results   []condition.Result
	// LastError is why the evaluation failed (nil: it did not).
	LastError *api.LastError
	// Failures is status.consecutiveFailures after this decision.
	Failures int
	// Capacity are the objects beyond spec.capacity to delete now,
	// whatever the conditions say (none in a dry run).
	Capacity []Found
	// WouldDelete is, in a dry run, what would have been deleted now
	// ("Kind/name"); Kept is what was spared for cairn.dev/keep.
	WouldDelete, Kept []string
}

// TTLExpiry returns when c's TTL passes: creation + ttl.
func TTLExpiry(c *api.Cleaner) time.Time {
	return c.CreationTimestamp.Add(c.Spec.TTL.Duration)
}

// ceilSecond rounds t up to a whole second: scheduled times read well in
// status, and an evaluation is never earlier than asked for.
func ceilSecond(t time.Time) time.Time {
	if r := t.Truncate(time.Second); r.Before(t) {
		return r.Add(time.Second)
	}
	return t
}

// period is c's retry.period, at least a second.
func period(c *api.Cleaner) time.Duration {
	return max(c.Spec.Retry.Period.Duration, time.Second)
}

// Decide takes the seed's reconcile decision for one Cleaner:
//
//  1. not found (or being deleted) → drop;
//  2. TTL not passed → wait until creation + ttl;
//
// (every time scheduled is rounded up to a whole second)
//  3. resolve the targets (and the capacity's objects); one that cannot be
//     read → retry after a backoff (FailureBackoff), phase Failed
//     (UnresolvableTarget);
//  4. the capacity's objects beyond its max, the oldest first, are to be
//     deleted whatever the conditions say (OverCapacity);
//  5. evaluate every condition; one that fails or is not a boolean →
//     retry after a backoff, phase Failed (EvaluationError,
//     NonBooleanResult);
//  6. all true → delete (a dry run: record what would be deleted and
//     retry after retry.period; a capacity with no conditions is a
//     standing rule, never deleted);
//  7. otherwise, with retry.monotonic, search for the earliest time they
//     all hold and retry then (no such time within condition.Horizon →
//     retry.period); without it, retry after retry.period.
//
// Objects carrying cairn.dev/keep are never deleted (Kept says which).
func Decide(ctx context.Context, in Input) Decision {
	c := in.Cleaner
	if c == nil || c.Deleting() {
		return Decision{Action: ActDrop}
	}
	if at := TTLExpiry(c); in.Now.Before(at) {
		return Decision{Action: ActWait, At: ceilSecond(at), Why: WhyTTL, Phase: api.CleanerWaiting}
	}
	retry := Decision{Action: ActRetry, At: ceilSecond(in.Now.Add(period(c))), Why: WhyPeriod, Phase: api.CleanerPending}
	if in.ProgramsErr != nil {
		return failed(retry, in, api.CleanerReasonInvalidSpec, in.ProgramsErr.Error(), false)
	}
	res, err := in.Resolve()
	if err != nil {
		return failed(retry, in, api.CleanerReasonUnresolvableTarget, err.Error(), true)
	}
	retry.Resolution = res
	retry.Capacity, retry.Kept = capacityDeletions(res)
	for _, f := range res.Kept() {
		retry.Kept = append(retry.Kept, f.Ref())
	}
	if c.Spec.DryRun {
		retry.WouldDelete, retry.Capacity = refsOf(retry.Capacity), nil
	}
	retry.Evaluated = true
	retry.Results = in.Programs.Eval(ctx, res.Vars, in.Now)
	if i, err := condition.FirstError(retry.Results); err != nil {
		reason := api.CleanerReasonEvaluationError
		if errors.Is(err, condition.ErrNonBoolean) {
			reason = api.CleanerReasonNonBoolean
		}
		return failed(retry, in, reason, fmt.Sprintf("condition %d: %v", i, err), true)
	}
	if condition.AllTrue(retry.Results) {
		return allTrue(c, retry)
	}
	if c.Spec.Retry.Monotonic {
		at, err := in.Programs.EarliestTrue(ctx, res.Vars, in.Now)
		if err != nil {
			// Said in status and trace: the fallback is never silent.
			retry.Search = "monotonic search found no time, so " + WhyPeriod + " applies: " + err.Error()
		} else {
			retry.At, retry.Why = at, WhyMonotonic
		}
	}
	return retry
}

// failed is d with phase Failed and lastError (reason, msg); with backoff
// the next evaluation is after FailureBackoff rather than retry.period.
func failed(d Decision, in Input, reason api.ErrorReason, msg string, backoff bool) Decision {
	d.Phase = api.CleanerFailed
	d.LastError = &api.LastError{Reason: reason, Message: msg, Time: in.Now}
	if backoff {
		d.Failures = in.Cleaner.Status.ConsecutiveFailures + 1
		d.At, d.Why = ceilSecond(in.Now.Add(FailureBackoff(d.Failures, period(in.Cleaner)))), WhyBackoff
	}
	return d
}

// allTrue is the decision when every condition holds: delete the targets
// and the Cleaner; in a dry run record them and retry after the period; a
// standing capacity rule (a capacity, no conditions) just retries.
func allTrue(c *api.Cleaner, d Decision) Decision {
	switch {
	case c.Spec.Capacity != nil && len(c.Spec.Conditions) == 0:
		d.Why = WhyStanding
	case c.Spec.DryRun:
		d.WouldDelete = append(refsOf(d.Resolution.ToDelete()), d.WouldDelete...)
		d.Why = WhyDryRun
	default:
		d.Action, d.At, d.Why, d.Phase = ActDelete, time.Time{}, "", api.CleanerDeleting
	}
	return d
}

// capacityDeletions is what res's capacity deletes (as Found of its kind)
// and keeps for cairn.dev/keep ("Kind/name").
func capacityDeletions(res Resolution) (del []Found, kept []string) {
	if res.CapacityKind == "" {
		return nil, nil
	}
	d, k := OverCapacity(res.Capacity, res.CapacityMax)
	for _, it := range d {
		del = append(del, Found{Target: "capacity", Kind: res.CapacityKind, Name: it.Name, UID: it.UID, Delete: true})
	}
	for _, it := range k {
		kept = append(kept, res.CapacityKind+"/"+it.Name)
	}
	return del, kept
}

// refsOf is the "Kind/name" of each of fs.
func refsOf(fs []Found) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Ref())
	}
	return out
}

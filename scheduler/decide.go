package scheduler

import (
	"fmt"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/runtime"
)

// Unit is what the runtime says of a worker's or job's unit: Exists false
// when it has none (never started, or removed).
type Unit struct {
	Exists bool
	State  runtime.State
}

// Observed is what the observer knows of one worker or job.
type Observed struct {
	Phase api.EventPhase
	// Ended is when it became terminal (zero if not known).
	Ended time.Time
	Unit  Unit
	// Timeout is the worker's timeout (0: none; jobs: always 0, their
	// timeouts are their worker's concern).
	Timeout time.Duration
	// Cleaned reports that this process already cleaned its unit up.
	Cleaned bool
}

// Plan is what to do about one worker or job.
type Plan struct {
	// Start the unit (a claimed worker or job that has none).
	Start bool
	// Phase, when set, is the phase to write, with Reason, ExitCode,
	// Started and Ended.
	Phase    api.EventPhase
	Reason   string
	ExitCode *int
	Started  time.Time
	Ended    time.Time
	// Kill the unit's processes (it was canceled, aborted or timed out).
	Kill bool
	// CleanupAt is when to clean the unit up (its workspace; its logs stay
	// until the event is deleted); zero: not now. At or before now: at once.
	CleanupAt time.Time
	// RecheckAt is when to look again (a timeout to enforce, a start to
	// confirm); zero: when something changes.
	RecheckAt time.Time
	// Why says what was decided, for the trace.
	Why string
}

// recheck is how soon a unit still being started is looked at again.
const recheck = time.Second

// Decide is the seed's "Worker Pod State is Observed", "Worker Pod Timeout
// is Observed", "Worker Fails to Start" and "Job State is Observed" for
// one worker or job, at now, with grace the delay before the runtime
// resources of a worker or job that ended by itself are cleaned up:
//
//   - PENDING: nothing (the scheduler claims it when capacity allows);
//   - STARTING without a unit: start it;
//   - STARTING, RUNNING or UNKNOWN with a unit: its state becomes the
//     phase (running → RUNNING; exit 0 → SUCCEEDED; another exit → FAILED
//     with the code; could not start → FAILED with the reason, cleaned up
//     at once; lost → FAILED); a timeout passed → kill, TIMED_OUT, cleaned
//     up at once;
//   - RUNNING or UNKNOWN without a unit: FAILED (the runtime lost it);
//   - terminal: a unit still running is killed and cleaned up at once
//     (canceled, aborted, timed out, or a 409 said so); SUCCEEDED and
//     FAILED are cleaned up a grace period after they ended; the others at
//     once.
func Decide(o Observed, now time.Time, grace time.Duration) Plan {
	u := o.Unit
	switch o.Phase {
	case api.PhasePending:
		return Plan{Why: "PENDING: waits for the scheduler"}
	case api.PhaseStarting, api.PhaseRunning, api.PhaseUnknown:
		if !u.Exists {
			if o.Phase == api.PhaseStarting {
				return Plan{Start: true, Why: "claimed: start its unit"}
			}
			return Plan{Phase: api.PhaseFailed, Reason: "lost: the runtime has no unit for it", Ended: now,
				CleanupAt: now, Why: "its unit is gone"}
		}
		return observe(o, now, grace)
	}
	// Terminal.
	p := Plan{Why: fmt.Sprintf("%s: clean up", o.Phase)}
	if !u.Exists || o.Cleaned {
		p.Why = fmt.Sprintf("%s: nothing left to clean up", o.Phase)
		return p
	}
	if !u.State.Phase.Done() {
		p.Kill, p.CleanupAt = true, now
		p.Why = fmt.Sprintf("%s while its unit runs: kill it and clean up at once", o.Phase)
		return p
	}
	p.CleanupAt = now
	if o.Phase == api.PhaseSucceeded || o.Phase == api.PhaseFailed {
		ended := o.Ended
		if ended.IsZero() {
			ended = u.State.Ended
		}
		p.CleanupAt = ended.Add(grace)
	}
	return p
}

// observe maps the state of an existing unit of a non-terminal worker or
// job to a plan.
func observe(o Observed, now time.Time, grace time.Duration) Plan {
	st := o.Unit.State
	switch st.Phase {
	case runtime.PhasePending:
		return Plan{RecheckAt: now.Add(recheck), Why: "its unit is being started"}
	case runtime.PhaseRunning:
		p := Plan{Why: "its unit runs"}
		if o.Phase != api.PhaseRunning {
			p.Phase, p.Started = api.PhaseRunning, st.Started
		}
		if o.Timeout > 0 {
			deadline := st.Started.Add(o.Timeout)
			if !now.Before(deadline) {
				return Plan{Phase: api.PhaseTimedOut, Reason: fmt.Sprintf("timed out after %s", o.Timeout), Ended: now,
					Kill: true, CleanupAt: now, Why: "its timeout passed: kill it and clean up at once"}
			}
			p.RecheckAt = deadline
		}
		return p
	case runtime.PhaseExited:
		code := st.ExitCode
		p := Plan{ExitCode: &code, Started: st.Started, Ended: endedAt(st, now), CleanupAt: endedAt(st, now).Add(grace)}
		if code == 0 {
			p.Phase, p.Why = api.PhaseSucceeded, "its unit exited with 0"
			return p
		}
		p.Phase, p.Reason = api.PhaseFailed, fmt.Sprintf("exited with code %d", code)
		if st.Reason != "" {
			p.Reason += ": " + st.Reason
		}
		p.Why = "its unit failed: " + p.Reason
		return p
	case runtime.PhaseFailed:
		return Plan{Phase: api.PhaseFailed, Reason: "failed to start: " + st.Reason, Ended: endedAt(st, now),
			CleanupAt: now, Why: "its unit could not start: " + st.Reason}
	}
	// Lost, or a phase this version does not know.
	return Plan{Phase: api.PhaseFailed, Reason: fmt.Sprintf("lost: %s", st.Reason), Ended: endedAt(st, now),
		CleanupAt: endedAt(st, now).Add(grace), Why: "its unit was lost: " + st.Reason}
}

func endedAt(st runtime.State, now time.Time) time.Time {
	if st.Ended.IsZero() {
		return now
	}
	return st.Ended
}

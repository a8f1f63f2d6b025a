package scheduler

import (
	"fmt"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/runtime"
)

// Unit is what the runtime says of a worker's or job's unit: Exists false
// when it has none (never started, or removed), or when it did not answer
// (Unanswered says how it failed).
type Unit struct {
	Exists bool
	State  runtime.State
	// Unanswered, when set, is the runtime's failure to say anything of
	// the unit: its state cannot be observed.
	Unanswered string
}

// Observed is what the observer knows of one worker or job.
type Observed struct {
	Phase api.EventPhase
	// Started and Ended are the status's (zero if not known); Ended is when
	// it became terminal.
	Started time.Time
	Ended   time.Time
	Unit    Unit
	// Timeout is the worker's timeout (0: none; jobs: always 0, their
	// timeouts are their worker's concern).
	Timeout time.Duration
	// UnknownSince is since when the unit's state cannot be observed (zero:
	// now, or it can); UnknownTimeout how long that may last before the
	// worker or job is FAILED (0: no bound).
	UnknownSince   time.Time
	UnknownTimeout time.Duration
	// Cleaned reports that this process already cleaned its unit up.
	Cleaned bool
	// Output is the last lines of the output of a unit that exited with
	// a non-zero code ("" when there is none): a FAILED status quotes it.
	Output string
	// Intent is the run recorded in the status (RunID) as being started:
	// a start was tried, by this process or another leader. Empty: never
	// tried, or a failed try was withdrawn.
	Intent string
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
	// Withdraw the recorded intent (RunID): a start that failed left no
	// unit, so the next start may be tried, by any leader.
	Withdraw bool
	// Why says what was decided, for the trace.
	Why string
}

// recheck is how soon a unit still being started is looked at again, and
// unknownRecheck how soon one whose state cannot be observed is.
const (
	recheck        = time.Second
	unknownRecheck = 2 * time.Second
)

// Decide is the seed's "Worker Pod State is Observed", "Worker Pod Timeout
// is Observed", "Worker Fails to Start" and "Job State is Observed" for
// one worker or job, at now, with grace the delay before the runtime
// resources of a worker or job that ended by itself are cleaned up:
//
//   - PENDING: nothing (the scheduler claims it when capacity allows);
//   - STARTING without a unit: start it (when the runtime does not answer:
//     look again soon) — unless a start was recorded (Intent): that run
//     was started, or is being started, by a leader whose runtime this is
//     not (or by this process before it restarted); it is never started
//     again, but lost: UNKNOWN, as below;
//   - STARTING, RUNNING or UNKNOWN with a unit: its state becomes the
//     phase (running → RUNNING; exit 0 → SUCCEEDED; another exit → FAILED
//     with the code; could not start → FAILED with the reason, cleaned up
//     at once); a timeout passed → kill, TIMED_OUT, cleaned up at once;
//   - STARTING, RUNNING or UNKNOWN whose state cannot be observed (the
//     runtime lost the unit, does not list it, or does not answer):
//     UNKNOWN, looked at again every few seconds; the worker's timeout
//     still applies (TIMED_OUT, as above); once it has been unknown for
//     UnknownTimeout, FAILED with a reason saying so, cleaned up a grace
//     period later, as any FAILED, whether the runtime lists the unit or
//     not. UNKNOWN stays cancelable (ABORTED, cleaned up at once);
//   - terminal: a unit still running is killed and cleaned up at once
//     (canceled, aborted, timed out, or a 409 said so); SUCCEEDED and
//     FAILED are cleaned up a grace period after they ended; the others at
//     once; when the runtime does not answer, look again soon.
func Decide(o Observed, now time.Time, grace time.Duration) Plan {
	u := o.Unit
	switch o.Phase {
	case api.PhasePending:
		return Plan{Why: "PENDING: waits for the scheduler"}
	case api.PhaseStarting, api.PhaseRunning, api.PhaseUnknown:
		if o.Phase == api.PhaseStarting && !u.Exists {
			if u.Unanswered != "" {
				return Plan{RecheckAt: now.Add(unknownRecheck), Why: "the runtime does not answer, start it once it does: " + u.Unanswered}
			}
			if o.Intent != "" {
				return unknown(o, lostWhy(o.Intent), now, grace)
			}
			return Plan{Start: true, Why: "claimed: start its unit"}
		}
		if why := UnknownWhy(u); why != "" {
			return unknown(o, why, now, grace)
		}
		return observe(o, now, grace)
	}
	// Terminal.
	p := Plan{Why: fmt.Sprintf("%s: clean up", o.Phase)}
	switch {
	case o.Cleaned:
		p.Why = fmt.Sprintf("%s: nothing left to clean up", o.Phase)
		return p
	case u.Unanswered != "":
		p.RecheckAt = now.Add(unknownRecheck)
		p.Why = fmt.Sprintf("%s: the runtime does not answer, clean up once it does: %s", o.Phase, u.Unanswered)
		return p
	case !u.Exists:
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

// UnknownWhy says why the state of the unit u cannot be observed, or ""
// when it can: the runtime did not answer, does not list the unit, lost
// it (its exit status is not known), or reports a phase this version does
// not know.
func UnknownWhy(u Unit) string {
	switch {
	case u.Unanswered != "":
		return "the runtime does not answer: " + u.Unanswered
	case !u.Exists:
		return "the runtime has no unit for it"
	}
	switch u.State.Phase {
	case runtime.PhasePending, runtime.PhaseRunning, runtime.PhaseExited, runtime.PhaseFailed:
		return ""
	case runtime.PhaseLost:
		return "lost: " + u.State.Reason
	}
	return fmt.Sprintf("its unit is in a phase this version does not know (%q)", u.State.Phase)
}

// lostWhy says why a recorded run without a unit is lost.
func lostWhy(run string) string {
	return fmt.Sprintf("lost: run %s was recorded as started, and this runtime has no unit for it "+
		"(started by another leader's runtime, or its start was cut short): it is never started twice", run)
}

// unknown is the plan of a non-terminal worker or job whose state cannot
// be observed, for why: the seed's UNKNOWN, bounded by the worker's
// timeout and by o.UnknownTimeout.
func unknown(o Observed, why string, now time.Time, grace time.Duration) Plan {
	started := o.Started
	if started.IsZero() {
		started = o.Unit.State.Started
	}
	var deadline time.Time
	if o.Timeout > 0 && !started.IsZero() {
		deadline = started.Add(o.Timeout)
		if !now.Before(deadline) {
			return Plan{Phase: api.PhaseTimedOut, Reason: fmt.Sprintf("timed out after %s (its state unknown: %s)", o.Timeout, why),
				Ended: now, Kill: true, CleanupAt: now, Why: "its timeout passed while its state was unknown: kill it and clean up at once"}
		}
	}
	since := o.UnknownSince
	if since.IsZero() {
		since = now
	}
	var bound time.Time
	if o.UnknownTimeout > 0 {
		bound = since.Add(o.UnknownTimeout)
		if !now.Before(bound) {
			reason := fmt.Sprintf("its state stayed unknown for %s: the runtime never knew it again (%s)", o.UnknownTimeout, why)
			return Plan{Phase: api.PhaseFailed, Reason: reason, Ended: now, CleanupAt: now.Add(grace), Why: reason}
		}
	}
	p := Plan{RecheckAt: earliest(earliest(now.Add(unknownRecheck), bound), deadline), Why: "its state cannot be observed: " + why}
	if o.Phase != api.PhaseUnknown {
		p.Phase, p.Reason = api.PhaseUnknown, why
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
		if o.Output != "" {
			p.Reason += "; output ends with: " + o.Output
		}
		p.Why = "its unit failed: " + p.Reason
		return p
	case runtime.PhaseFailed:
		return Plan{Phase: api.PhaseFailed, Reason: "failed to start: " + st.Reason, Ended: endedAt(st, now),
			CleanupAt: now, Why: "its unit could not start: " + st.Reason}
	}
	// Lost, or a phase this version does not know (Decide sends those to
	// unknown first).
	return unknown(o, UnknownWhy(o.Unit), now, grace)
}

func endedAt(st runtime.State, now time.Time) time.Time {
	if st.Ended.IsZero() {
		return now
	}
	return st.Ended
}

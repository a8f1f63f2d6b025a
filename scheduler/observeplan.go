package scheduler

import (
	"errors"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/runtime"
)

// sighting is what one observation read of a worker (job "") or job of an
// event: its unit's ID and what is known of it. A job still PENDING is
// not asked about (its worker starts it).
type sighting struct {
	job  string
	unit string
	o    Observed
}

// observation is what one observation of an event does, in this order:
// write status (when it changed: the seed's first step of every
// observation), start the units of starts, write again what their starts
// said, then act.
type observation struct {
	status api.EventStatus
	// plans are the sightings' plans, by index.
	plans []Plan
	// starts are the indexes of the sightings whose unit is started
	// after the write.
	starts []int
	// acts are the runtime's actions for the others.
	acts []action
	// canceled are the PENDING jobs canceled as their worker ended.
	canceled []string
}

// planObservation plans the observation of an event whose status is st
// (its worker not PENDING) from sights (the worker first, then the jobs
// in the order of st.Jobs), at now, with grace the cleanup delay of
// Decide: each worker or job is decided, the phases go into the status to
// write, claimed units are started only after that write, and PENDING jobs
// of a worker that ended are CANCELED.
func planObservation(st api.EventStatus, sights []sighting, now time.Time, grace time.Duration) observation {
	ob := observation{status: st, plans: make([]Plan, len(sights))}
	ob.status.Jobs = append([]api.JobStatus(nil), st.Jobs...)
	for i, s := range sights {
		if s.job != "" && s.o.Phase == api.PhasePending {
			continue
		}
		p := Decide(s.o, now, grace)
		ob.plans[i] = p
		if p.Start {
			ob.starts = append(ob.starts, i)
			recordIntent(&ob.status, i, s.unit)
			continue
		}
		apply(&ob.status, i, p)
		ob.acts = append(ob.acts, action{s.unit, p, live(s.o.Unit, p)})
	}
	ob.canceled = cancelPending(&ob.status, now)
	return ob
}

// recordIntent writes into st the run of sighting i (0: the worker, i:
// job i-1) as being started: the status write before the start is the
// fenced record of the intent (Observed.Intent).
func recordIntent(st *api.EventStatus, i int, run string) {
	if i == 0 {
		st.Worker.RunID = run
		return
	}
	st.Jobs[i-1].RunID = run
}

// started is the plan of a claimed worker or job once its start was
// tried: u the unit it started (Exists false when it did not start), err
// why it did not (a *StartError, errNoSecret or runtime.ErrInvalid end it,
// any other is tried again soon; then, when the runtime answered that it
// has no unit, the recorded intent is withdrawn, so that the next try,
// by this leader or another, may start it).
func started(o Observed, u Unit, err error, now time.Time, grace time.Duration) Plan {
	if err != nil {
		p := startFailed(err, now)
		p.Withdraw = p.Phase == "" && !u.Exists && u.Unanswered == ""
		return p
	}
	o.Unit = u
	return Decide(o, now, grace)
}

// applyStarts writes into st the plans of the sightings started (by
// index), cancels the PENDING jobs of a worker that could not start, and
// returns the actions for the started units and the jobs canceled.
func applyStarts(st *api.EventStatus, sights []sighting, plans map[int]Plan, units map[int]Unit, now time.Time) ([]action, []string) {
	var acts []action
	for i, s := range sights {
		p, ok := plans[i]
		if !ok {
			continue
		}
		apply(st, i, p)
		acts = append(acts, action{s.unit, p, live(units[i], p)})
	}
	return acts, cancelPending(st, now)
}

// apply writes the plan of sighting i (0: the worker, i: job i-1) into
// st.
func apply(st *api.EventStatus, i int, p Plan) {
	if p.Withdraw {
		recordIntent(st, i, "")
	}
	if i == 0 {
		applyWorker(&st.Worker, p)
		return
	}
	applyJob(&st.Jobs[i-1], p)
}

// cancelPending makes the PENDING jobs of a terminal worker CANCELED
// ("its worker ended before it started") and returns their names.
func cancelPending(st *api.EventStatus, now time.Time) []string {
	if !st.Worker.Phase.Terminal() {
		return nil
	}
	var out []string
	for i := range st.Jobs {
		j := &st.Jobs[i]
		if j.Phase != api.PhasePending {
			continue
		}
		j.Phase, j.Reason, j.Ended = api.PhaseCanceled, "its worker ended before it started", now.UTC()
		out = append(out, j.Name)
	}
	return out
}

// startFailed is the plan of a worker or job whose unit did not start
// for err: a command that cannot run fails it with the reason; an event
// without its Secret, or a spec the runtime refuses, fails scheduling;
// anything else is tried again soon.
func startFailed(err error, now time.Time) Plan {
	var se *StartError
	switch {
	case errors.As(err, &se):
		return Plan{Phase: api.PhaseFailed, Reason: "failed to start: " + se.Reason, Ended: now, Why: "it could not start"}
	case errors.Is(err, errNoSecret), errors.Is(err, runtime.ErrInvalid):
		return Plan{Phase: api.PhaseSchedulingFailed, Reason: err.Error(), Ended: now, Why: "it cannot be scheduled"}
	}
	return Plan{RecheckAt: now.Add(recheck), Why: "the runtime did not start it: " + err.Error()}
}

package scheduler

import (
	"context"
	"errors"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/runtime"
	"cairn.dev/cairn/trace"
)

// sight reads what the runtime says of the units of ev's worker and jobs
// at now (a PENDING job's is not asked about: its worker starts it), as
// planObservation takes them. It blocks on the runtime; errors: ctx's.
func (s *Scheduler) sight(ctx context.Context, ev *api.Event, now time.Time) ([]sighting, error) {
	w := ev.Status.Worker
	sights := []sighting{{unit: unitFor(ev, ""), o: Observed{Phase: w.Phase, Started: w.Started, Ended: w.Ended,
		Timeout: timeout(ev.Spec.Worker), UnknownTimeout: s.opts.UnknownTimeout, Intent: w.RunID}}}
	for _, j := range ev.Status.Jobs {
		sights = append(sights, sighting{job: j.Name, unit: unitFor(ev, j.Name),
			o: Observed{Phase: j.Phase, Started: j.Started, Ended: j.Ended, UnknownTimeout: s.opts.UnknownTimeout, Intent: j.RunID}})
	}
	for i := range sights {
		sg := &sights[i]
		if sg.job != "" && sg.o.Phase == api.PhasePending {
			continue
		}
		var err error
		if sg.o.Unit, err = s.unit(ctx, sg.unit); err != nil {
			return nil, err
		}
		sg.o.UnknownSince = s.unknownSince(sg.unit, sg.o, now)
		sg.o.Cleaned = s.isCleaned(sg.unit)
		sg.o.Output = s.failedOutput(ctx, *sg)
	}
	return sights, nil
}

// traceObservation traces what the observation found and decided, but
// for the units it starts (startClaimed traces those).
func traceObservation(ctx context.Context, sights []sighting, ob observation) {
	trace.Check(ctx, "worker is %s; its unit: %s", sights[0].o.Phase, sights[0].o.Unit)
	started := map[int]bool{}
	for _, i := range ob.starts {
		started[i] = true
	}
	for i, sg := range sights {
		if started[i] || (sg.job != "" && sg.o.Phase == api.PhasePending) {
			continue
		}
		traceDecided(ctx, sg, ob.plans[i])
	}
	traceCanceled(ctx, ob.canceled)
}

func traceDecided(ctx context.Context, sg sighting, p Plan) {
	if sg.job == "" {
		trace.Check(ctx, "worker: %s", p.Why)
		return
	}
	trace.Check(ctx, "job %s is %s; its unit: %s: %s", sg.job, sg.o.Phase, sg.o.Unit, p.Why)
}

func traceCanceled(ctx context.Context, jobs []string) {
	for _, j := range jobs {
		trace.Action(ctx, "job %s: CANCELED, its worker ended before it started", j)
	}
}

// writeObserved writes st as ev's status when it changed
// (controller.StatusChanged; the seed's "use the API to update the state") and returns the event as written.
// done says the observation ends here with res and err: 404, presumed
// deleted (its units go at once); 409, as conflict says; another error.
func (s *Scheduler) writeObserved(ctx context.Context, key string, ev *api.Event, st api.EventStatus) (cur *api.Event, res controller.Result, done bool, err error) {
	st.JobPhases = api.SummarizeJobs(st.Jobs) // as the registry stores it
	if !controller.StatusChanged(ev.Status, st) {
		return ev, controller.Result{}, false, nil
	}
	next := *ev
	next.Status = st
	out, err := client.For[*api.Event](s.c).UpdateStatus(ctx, &next)
	switch {
	case errors.Is(err, api.ErrNotFound):
		trace.Exit(ctx, "404 writing the status: presumed deleted, its runtime resources go at once")
		return nil, controller.Result{}, true, s.removeUnits(ctx, ev.UID)
	case errors.Is(err, api.ErrConflict):
		res, err := s.conflict(ctx, ev)
		return nil, res, true, err
	case err != nil:
		return nil, controller.Result{}, true, err
	}
	trace.Action(ctx, "worker %s%s", st.Worker.Phase, jobsSummary(&st))
	return out, controller.Result{}, false, nil
}

// startClaimed starts the units of the sightings starts (by index), once
// the status is written, and returns their plans and units by index. It
// blocks on the API and the runtime; a unit that does not start is its
// plan's (failed, or tried again soon), never an error.
func (s *Scheduler) startClaimed(ctx context.Context, ev *api.Event, sights []sighting, starts []int, now time.Time) (map[int]Plan, map[int]Unit) {
	plans, units := map[int]Plan{}, map[int]Unit{}
	for _, i := range starts {
		sg := sights[i]
		spec := ev.Spec.Worker
		if sg.job == "" {
			trace.Subflow(ctx, "start the worker")
		} else {
			spec = ev.Status.Jobs[i-1].Spec
		}
		st, err := s.start(ctx, ev, sg.job, spec)
		var se *StartError
		switch {
		case errors.As(err, &se):
			trace.Check(ctx, "failed to start: %s", se.Reason)
		case errors.Is(err, errNoSecret), errors.Is(err, runtime.ErrInvalid):
			trace.Check(ctx, "cannot be scheduled: %v", err)
		case err != nil:
			trace.Check(ctx, "starting failed, will retry: %v", err)
			units[i] = s.afterFailedStart(ctx, sg.unit)
		default:
			trace.Action(ctx, "started its unit on the runtime")
			units[i] = Unit{Exists: true, State: st}
		}
		plans[i] = started(sg.o, units[i], err, now, s.opts.GracePeriod)
		sg.o.Unit = units[i]
		traceDecided(ctx, sg, plans[i])
	}
	return plans, units
}

// afterFailedStart reads the unit id after a start that failed for a
// reason tried again: whether the runtime has it says whether the
// recorded intent may be withdrawn (started). A runtime that cannot say
// (or ctx ended) leaves it Unanswered: the intent stays.
func (s *Scheduler) afterFailedStart(ctx context.Context, id string) Unit {
	u, err := s.unit(ctx, id)
	if err != nil {
		return Unit{Unanswered: err.Error()}
	}
	return u
}

package scheduler

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/runtime"
)

// TestPlanObservation_StartsAfterTheStatusWrite walks the observation of
// an event: claimed units are only planned (started after the status is
// written), the phases of the others go into the status to write, with
// their runtime actions, and PENDING jobs of an ended worker are
// CANCELED.
func TestPlanObservation_StartsAfterTheStatusWrite(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	grace := time.Minute
	running := Unit{Exists: true, State: runtime.State{Phase: runtime.PhaseRunning, Started: now.Add(-time.Minute)}}
	exited := func(code int) Unit {
		return Unit{Exists: true, State: runtime.State{Phase: runtime.PhaseExited, ExitCode: code, Started: now.Add(-time.Minute), Ended: now.Add(-time.Second)}}
	}
	worker := func(phase api.EventPhase, u Unit) sighting {
		return sighting{unit: "w", o: Observed{Phase: phase, Unit: u}}
	}
	job := func(name string, phase api.EventPhase, u Unit) sighting {
		return sighting{job: name, unit: "j-" + name, o: Observed{Phase: phase, Unit: u}}
	}
	status := func(sights ...sighting) api.EventStatus {
		st := api.EventStatus{Worker: api.WorkerStatus{Phase: sights[0].o.Phase}}
		for _, s := range sights[1:] {
			st.Jobs = append(st.Jobs, api.JobStatus{Name: s.job, Phase: s.o.Phase})
		}
		return st
	}
	for _, tc := range []struct {
		name     string
		sights   []sighting
		starts   []int
		worker   api.EventPhase   // the worker's phase to write
		jobs     []api.EventPhase // the jobs' phases to write
		acts     []string         // the units acted on (not started)
		canceled []string
	}{
		{name: "a claimed worker is started after the write, which changes nothing",
			sights: []sighting{worker(api.PhaseStarting, Unit{})}, starts: []int{0}, worker: api.PhaseStarting},
		{name: "a claimed job is started after the write of its worker's phase",
			sights: []sighting{worker(api.PhaseStarting, running), job("build", api.PhaseStarting, Unit{})},
			starts: []int{1}, worker: api.PhaseRunning, jobs: []api.EventPhase{api.PhaseStarting}, acts: []string{"w"}},
		{name: "a runtime that does not answer starts nothing",
			sights: []sighting{worker(api.PhaseStarting, Unit{Unanswered: "refused"})}, worker: api.PhaseStarting, acts: []string{"w"}},
		{name: "a worker that exited is written, its jobs observed",
			sights: []sighting{worker(api.PhaseRunning, exited(0)), job("build", api.PhaseRunning, exited(2))},
			worker: api.PhaseSucceeded, jobs: []api.EventPhase{api.PhaseFailed}, acts: []string{"w", "j-build"}},
		{name: "PENDING jobs of an ended worker are CANCELED, not acted on",
			sights: []sighting{worker(api.PhaseRunning, exited(1)), job("a", api.PhasePending, Unit{}), job("b", api.PhaseSucceeded, Unit{})},
			worker: api.PhaseFailed, jobs: []api.EventPhase{api.PhaseCanceled, api.PhaseSucceeded}, acts: []string{"w", "j-b"}, canceled: []string{"a"}},
		{name: "PENDING jobs of a live worker wait",
			sights: []sighting{worker(api.PhaseRunning, running), job("a", api.PhasePending, Unit{})},
			worker: api.PhaseRunning, jobs: []api.EventPhase{api.PhasePending}, acts: []string{"w"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := status(tc.sights...)
			ob := planObservation(st, tc.sights, now, grace)
			if fmt.Sprint(ob.starts) != fmt.Sprint(tc.starts) {
				t.Fatalf("starts = %v, want %v", ob.starts, tc.starts)
			}
			if ob.status.Worker.Phase != tc.worker {
				t.Fatalf("worker phase to write = %s, want %s", ob.status.Worker.Phase, tc.worker)
			}
			for i, want := range tc.jobs {
				if got := ob.status.Jobs[i].Phase; got != want {
					t.Fatalf("job %s phase to write = %s, want %s", ob.status.Jobs[i].Name, got, want)
				}
			}
			var acted []string
			for _, a := range ob.acts {
				acted = append(acted, a.unit)
			}
			if fmt.Sprint(acted) != fmt.Sprint(tc.acts) || fmt.Sprint(ob.canceled) != fmt.Sprint(tc.canceled) {
				t.Fatalf("acts on %v, canceled %v; want %v, %v", acted, ob.canceled, tc.acts, tc.canceled)
			}
			if len(st.Jobs) > 0 && &st.Jobs[0] == &ob.status.Jobs[0] {
				t.Fatal("the plan writes into the status it was given")
			}
		})
	}
}

// TestStarted_DecidesFromTheStartsOutcome: what a start said becomes the
// phase to write after it, and PENDING jobs of a worker that could not
// start are CANCELED.
func TestStarted_DecidesFromTheStartsOutcome(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	o := Observed{Phase: api.PhaseStarting}
	running := Unit{Exists: true, State: runtime.State{Phase: runtime.PhaseRunning, Started: now}}
	for _, tc := range []struct {
		name  string
		unit  Unit
		err   error
		phase api.EventPhase
		again bool
	}{
		{"started and running: RUNNING", running, nil, api.PhaseRunning, false},
		{"command not found: FAILED", Unit{}, &StartError{Reason: `command "x" not found in PATH`}, api.PhaseFailed, false},
		{"no secrets: SCHEDULING_FAILED", Unit{}, errNoSecret, api.PhaseSchedulingFailed, false},
		{"spec refused: SCHEDULING_FAILED", Unit{}, fmt.Errorf("bad: %w", runtime.ErrInvalid), api.PhaseSchedulingFailed, false},
		{"runtime error: tried again soon", Unit{}, errors.New("disk full"), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := started(o, tc.unit, tc.err, now, time.Minute)
			if p.Phase != tc.phase || p.RecheckAt.IsZero() == tc.again {
				t.Fatalf("plan = %+v, want phase %q, again %v", p, tc.phase, tc.again)
			}
		})
	}
	st := api.EventStatus{Worker: api.WorkerStatus{Phase: api.PhaseStarting}, Jobs: []api.JobStatus{{Name: "a", Phase: api.PhasePending}}}
	sights := []sighting{{unit: "w", o: o}, {job: "a", unit: "j-a", o: Observed{Phase: api.PhasePending}}}
	p := started(o, Unit{}, &StartError{Reason: "no"}, now, time.Minute)
	acts, canceled := applyStarts(&st, sights, map[int]Plan{0: p}, map[int]Unit{}, now)
	if st.Worker.Phase != api.PhaseFailed || st.Jobs[0].Phase != api.PhaseCanceled || fmt.Sprint(canceled) != "[a]" || len(acts) != 1 || acts[0].live {
		t.Fatalf("after a failed start: worker %s, job %s, canceled %v, acts %+v", st.Worker.Phase, st.Jobs[0].Phase, canceled, acts)
	}
}

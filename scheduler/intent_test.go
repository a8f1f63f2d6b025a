package scheduler

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/runtime"
)

// The intent decision: a claimed worker or job is started only when no
// start was recorded; a recorded run that this runtime does not have is
// lost (UNKNOWN), never started again; one it has is observed.
func TestDecide_RecordedStartIsNeverStartedAgain(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	running := Unit{Exists: true, State: runtime.State{Phase: runtime.PhaseRunning, Started: now.Add(-time.Second)}}
	const run = "ev-uid"
	for _, tc := range []struct {
		name   string
		in     Observed
		start  bool
		phase  api.EventPhase
		reason string // a substring of the reason written
	}{
		{name: "no intent, no unit: start", in: Observed{Phase: api.PhaseStarting}, start: true},
		{name: "intent, no unit: lost, UNKNOWN", in: Observed{Phase: api.PhaseStarting, Intent: run},
			phase: api.PhaseUnknown, reason: "lost: run ev-uid was recorded as started"},
		{name: "intent, unit here: observed", in: Observed{Phase: api.PhaseStarting, Intent: run, Unit: running},
			phase: api.PhaseRunning},
		{name: "intent, runtime does not answer: wait", in: Observed{Phase: api.PhaseStarting, Intent: run,
			Unit: Unit{Unanswered: "down"}}},
		{name: "intent, no unit, unknown too long: FAILED", in: Observed{Phase: api.PhaseStarting, Intent: run,
			UnknownTimeout: time.Minute, UnknownSince: now.Add(-time.Hour)}, phase: api.PhaseFailed, reason: "lost: run ev-uid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.in, now, time.Minute)
			if p.Start != tc.start || p.Phase != tc.phase || !strings.Contains(p.Reason, tc.reason) {
				t.Fatalf("plan = %+v, want start %v, phase %q, reason with %q", p, tc.start, tc.phase, tc.reason)
			}
		})
	}
}

// The intent is recorded in the status written before the start, for
// the worker and for a job.
func TestPlanObservation_RecordsTheIntentBeforeTheStart(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	st := api.EventStatus{Worker: api.WorkerStatus{Phase: api.PhaseRunning},
		Jobs: []api.JobStatus{{Name: "a", Phase: api.PhaseStarting}}}
	running := Unit{Exists: true, State: runtime.State{Phase: runtime.PhaseRunning, Started: now}}
	sights := []sighting{{unit: "ev-u", o: Observed{Phase: api.PhaseRunning, Unit: running}},
		{job: "a", unit: "ev-u-a", o: Observed{Phase: api.PhaseStarting}}}
	ob := planObservation(st, sights, now, time.Minute)
	if fmt.Sprint(ob.starts) != "[1]" || ob.status.Jobs[0].RunID != "ev-u-a" || ob.status.Worker.RunID != "" {
		t.Fatalf("starts %v, job runID %q, worker runID %q; want [1], ev-u-a, none", ob.starts, ob.status.Jobs[0].RunID, ob.status.Worker.RunID)
	}
	if st.Jobs[0].RunID != "" {
		t.Fatal("planObservation changed its input")
	}
}

// A start that failed for a reason tried again withdraws the intent only
// when the runtime answered that it has no unit.
func TestStarted_WithdrawsTheIntentOnlyWhenNoUnitWasLeft(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	o := Observed{Phase: api.PhaseStarting, Intent: "ev-u"}
	pending := Unit{Exists: true, State: runtime.State{Phase: runtime.PhasePending}}
	for _, tc := range []struct {
		name     string
		after    Unit
		err      error
		withdraw bool
	}{
		{"retried, no unit left: withdrawn", Unit{}, errors.New("disk full"), true},
		{"retried, a unit was left: kept", pending, errors.New("context canceled"), false},
		{"retried, runtime silent: kept", Unit{Unanswered: "down"}, errors.New("disk full"), false},
		{"failed for good: kept (terminal)", Unit{}, &StartError{Reason: "no"}, false},
		{"started: kept", pending, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := started(o, tc.after, tc.err, now, time.Minute)
			if p.Withdraw != tc.withdraw {
				t.Fatalf("plan = %+v, want withdraw %v", p, tc.withdraw)
			}
			st := api.EventStatus{Worker: api.WorkerStatus{Phase: api.PhaseStarting, RunID: "ev-u"}}
			apply(&st, 0, p)
			if (st.Worker.RunID == "") != tc.withdraw {
				t.Fatalf("runID after apply = %q, withdraw %v", st.Worker.RunID, tc.withdraw)
			}
		})
	}
}

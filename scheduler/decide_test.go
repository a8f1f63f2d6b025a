package scheduler_test

import (
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/runtime"
	"cairn.dev/cairn/scheduler"
)

func TestDecide_FollowsTheSeedsObservations(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	grace := time.Minute
	running := scheduler.Unit{Exists: true, State: runtime.State{Phase: runtime.PhaseRunning, Started: now.Add(-time.Minute)}}
	exited := func(code int) scheduler.Unit {
		return scheduler.Unit{Exists: true, State: runtime.State{Phase: runtime.PhaseExited, ExitCode: code, Started: now.Add(-time.Minute), Ended: now.Add(-time.Second)}}
	}
	failed := scheduler.Unit{Exists: true, State: runtime.State{Phase: runtime.PhaseFailed, Reason: "exec: not found", Ended: now}}
	lost := scheduler.Unit{Exists: true, State: runtime.State{Phase: runtime.PhaseLost, Reason: "vanished", Ended: now}}
	unanswered := scheduler.Unit{Unanswered: "connection refused"}
	const bound = 10 * time.Minute
	for _, tc := range []struct {
		name  string
		in    scheduler.Observed
		phase api.EventPhase
		start bool
		kill  bool
		clean time.Time // zero: no cleanup now or later
		again time.Time
	}{
		{name: "pending waits", in: scheduler.Observed{Phase: api.PhasePending}},
		{name: "claimed without unit starts", in: scheduler.Observed{Phase: api.PhaseStarting}, start: true},
		{name: "starting and running becomes RUNNING", in: scheduler.Observed{Phase: api.PhaseStarting, Unit: running}, phase: api.PhaseRunning},
		{name: "running stays", in: scheduler.Observed{Phase: api.PhaseRunning, Unit: running}},
		{name: "unknown found running", in: scheduler.Observed{Phase: api.PhaseUnknown, Unit: running}, phase: api.PhaseRunning},
		{name: "timeout ahead is rechecked", in: scheduler.Observed{Phase: api.PhaseRunning, Unit: running, Timeout: 2 * time.Minute},
			again: now.Add(time.Minute)},
		{name: "timeout passed", in: scheduler.Observed{Phase: api.PhaseRunning, Unit: running, Timeout: 30 * time.Second},
			phase: api.PhaseTimedOut, kill: true, clean: now},
		{name: "exit 0 succeeds, cleaned after grace", in: scheduler.Observed{Phase: api.PhaseRunning, Unit: exited(0)},
			phase: api.PhaseSucceeded, clean: now.Add(-time.Second).Add(grace)},
		{name: "exit 3 fails", in: scheduler.Observed{Phase: api.PhaseRunning, Unit: exited(3)},
			phase: api.PhaseFailed, clean: now.Add(-time.Second).Add(grace)},
		{name: "fast exit seen while STARTING", in: scheduler.Observed{Phase: api.PhaseStarting, Unit: exited(0)},
			phase: api.PhaseSucceeded, clean: now.Add(-time.Second).Add(grace)},
		{name: "fails to start: reason, cleaned at once", in: scheduler.Observed{Phase: api.PhaseStarting, Unit: failed},
			phase: api.PhaseFailed, clean: now},
		// UNKNOWN: the state cannot be observed. Lost, not listed and not
		// answered alike, and cleaned up alike once given up on.
		{name: "lost is UNKNOWN", in: scheduler.Observed{Phase: api.PhaseRunning, Unit: lost, UnknownTimeout: bound},
			phase: api.PhaseUnknown, again: now.Add(2 * time.Second)},
		{name: "lost while STARTING is UNKNOWN", in: scheduler.Observed{Phase: api.PhaseStarting, Unit: lost, UnknownTimeout: bound},
			phase: api.PhaseUnknown, again: now.Add(2 * time.Second)},
		{name: "not listed is UNKNOWN", in: scheduler.Observed{Phase: api.PhaseRunning, UnknownTimeout: bound},
			phase: api.PhaseUnknown, again: now.Add(2 * time.Second)},
		{name: "not answered is UNKNOWN", in: scheduler.Observed{Phase: api.PhaseRunning, Unit: unanswered, UnknownTimeout: bound},
			phase: api.PhaseUnknown, again: now.Add(2 * time.Second)},
		{name: "UNKNOWN stays, looked at again", in: scheduler.Observed{Phase: api.PhaseUnknown, Unit: lost, UnknownTimeout: bound,
			UnknownSince: now.Add(-time.Minute)}, again: now.Add(2 * time.Second)},
		{name: "UNKNOWN is looked at again when its bound passes", in: scheduler.Observed{Phase: api.PhaseUnknown, Unit: unanswered,
			UnknownTimeout: bound, UnknownSince: now.Add(-bound).Add(time.Second)}, again: now.Add(time.Second)},
		{name: "lost beyond the bound fails, cleaned after grace", in: scheduler.Observed{Phase: api.PhaseUnknown, Unit: lost,
			UnknownTimeout: bound, UnknownSince: now.Add(-bound)}, phase: api.PhaseFailed, clean: now.Add(grace)},
		{name: "not listed beyond the bound fails, cleaned after grace", in: scheduler.Observed{Phase: api.PhaseUnknown,
			UnknownTimeout: bound, UnknownSince: now.Add(-bound)}, phase: api.PhaseFailed, clean: now.Add(grace)},
		{name: "not answered beyond the bound fails, cleaned after grace", in: scheduler.Observed{Phase: api.PhaseUnknown, Unit: unanswered,
			UnknownTimeout: bound, UnknownSince: now.Add(-bound)}, phase: api.PhaseFailed, clean: now.Add(grace)},
		{name: "UNKNOWN found running", in: scheduler.Observed{Phase: api.PhaseUnknown, Unit: running, UnknownTimeout: bound}, phase: api.PhaseRunning},
		{name: "UNKNOWN that exited succeeds", in: scheduler.Observed{Phase: api.PhaseUnknown, Unit: exited(0)},
			phase: api.PhaseSucceeded, clean: now.Add(-time.Second).Add(grace)},
		{name: "UNKNOWN beyond the worker's timeout", in: scheduler.Observed{Phase: api.PhaseUnknown, Unit: unanswered,
			Started: now.Add(-time.Hour), Timeout: time.Minute, UnknownTimeout: bound}, phase: api.PhaseTimedOut, kill: true, clean: now},
		{name: "UNKNOWN rechecked by its worker's timeout", in: scheduler.Observed{Phase: api.PhaseUnknown, Unit: lost,
			Started: now.Add(-time.Minute), Timeout: time.Minute + time.Second, UnknownTimeout: bound}, again: now.Add(time.Second)},
		{name: "aborted UNKNOWN: at once", in: scheduler.Observed{Phase: api.PhaseAborted, Unit: lost}, clean: now},
		{name: "STARTING, runtime not answering: not started, looked at again", in: scheduler.Observed{Phase: api.PhaseStarting, Unit: unanswered},
			again: now.Add(2 * time.Second)},
		{name: "terminal, runtime not answering: looked at again", in: scheduler.Observed{Phase: api.PhaseAborted, Unit: unanswered},
			again: now.Add(2 * time.Second)},
		{name: "aborted while running: kill at once", in: scheduler.Observed{Phase: api.PhaseAborted, Unit: running}, kill: true, clean: now},
		{name: "canceled with an ended unit: at once", in: scheduler.Observed{Phase: api.PhaseCanceled, Unit: exited(0)}, clean: now},
		{name: "timed out: at once", in: scheduler.Observed{Phase: api.PhaseTimedOut, Unit: exited(137)}, clean: now},
		{name: "succeeded: after grace from its end", in: scheduler.Observed{Phase: api.PhaseSucceeded, Unit: exited(0), Ended: now.Add(-10 * time.Second)},
			clean: now.Add(50 * time.Second)},
		{name: "succeeded and cleaned: nothing", in: scheduler.Observed{Phase: api.PhaseSucceeded, Unit: exited(0), Cleaned: true}},
		{name: "terminal without unit: nothing", in: scheduler.Observed{Phase: api.PhaseFailed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := scheduler.Decide(tc.in, now, grace)
			if p.Phase != tc.phase || p.Start != tc.start || p.Kill != tc.kill || !p.CleanupAt.Equal(tc.clean) || !p.RecheckAt.Equal(tc.again) {
				t.Fatalf("Decide = phase %q start %v kill %v cleanup %v recheck %v (%s); want %q %v %v %v %v",
					p.Phase, p.Start, p.Kill, p.CleanupAt, p.RecheckAt, p.Why, tc.phase, tc.start, tc.kill, tc.clean, tc.again)
			}
			if p.Phase != "" && !api.Transition(tc.in.Phase, p.Phase) {
				t.Fatalf("Decide moves %s to %s, which the seed does not allow", tc.in.Phase, p.Phase)
			}
			if (p.Phase == api.PhaseFailed || p.Phase == api.PhaseUnknown) && p.Reason == "" {
				t.Fatalf("%s without a reason", p.Phase)
			}
		})
	}
}

package scheduler_test

import (
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/runtime"
	"cairn.dev/cairn/scheduler"
)

func TestDecide_FailedExitQuotesTheOutputsLastLines(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	exited := func(code int, reason string) scheduler.Unit {
		return scheduler.Unit{Exists: true, State: runtime.State{Phase: runtime.PhaseExited, ExitCode: code, Reason: reason, Ended: now}}
	}
	for _, tc := range []struct {
		name   string
		in     scheduler.Observed
		phase  api.EventPhase
		reason string
	}{
		{"failed with output", scheduler.Observed{Phase: api.PhaseRunning, Unit: exited(3, ""), Output: "… | make: *** [build] Error 1"},
			api.PhaseFailed, "exited with code 3; output ends with: … | make: *** [build] Error 1"},
		{"failed by a signal with output", scheduler.Observed{Phase: api.PhaseRunning, Unit: exited(137, "killed by SIGKILL"), Output: "oom"},
			api.PhaseFailed, "exited with code 137: killed by SIGKILL; output ends with: oom"},
		{"failed without output", scheduler.Observed{Phase: api.PhaseRunning, Unit: exited(1, "")}, api.PhaseFailed, "exited with code 1"},
		{"succeeded quotes nothing", scheduler.Observed{Phase: api.PhaseRunning, Unit: exited(0, ""), Output: "ignored"}, api.PhaseSucceeded, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := scheduler.Decide(tc.in, now, time.Minute)
			if p.Phase != tc.phase || p.Reason != tc.reason {
				t.Fatalf("Decide = %s %q, want %s %q", p.Phase, p.Reason, tc.phase, tc.reason)
			}
		})
	}
}

package scheduler

import (
	"context"
	"errors"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/runtime"
	"cairn.dev/cairn/trace"
	"cairn.dev/cairn/unitlog"
)

// Lines and bytes of a failed unit's output its status quotes.
const (
	failedLines = 5
	failedBytes = 500
)

// keepLogs keeps, through the API, the output tail of every unit of ev
// that ended (unitlog.Keeper: a Secret owned by the event), once per unit
// in this process, before the units are cleaned up: it survives the host
// that ran them. A refusal for good (unitlog.ErrNotKept: the namespace's
// bytes are spent) is logged and traced, not retried. It blocks on the
// runtime and the API. Errors: the others (the reconcile is retried).
func (s *Scheduler) keepLogs(ctx context.Context, ev *api.Event, sights []sighting) error {
	owner := api.OwnerReference{APIVersion: api.APIVersion, Kind: api.KindEvent, Name: ev.Name, UID: ev.UID}
	for _, sg := range sights {
		u := sg.o.Unit
		if !u.Exists || !u.State.Phase.Done() || s.keep.Kept(sg.unit) {
			continue
		}
		err := s.keep.Keep(ctx, ev.Namespace, owner, sg.unit)
		switch {
		case err == nil:
			trace.Action(ctx, "kept the tail of unit %s's output through the API (Secret %s)", sg.unit, api.UnitLogSecretName(sg.unit))
		case errors.Is(err, runtime.ErrNotFound):
		case errors.Is(err, unitlog.ErrNotKept):
			s.log.Warn("the output of a unit is not kept through the API", "unit", sg.unit, "err", api.LogValue(err))
			trace.Check(ctx, "the output of unit %s is not kept through the API: %v", sg.unit, err)
		default:
			return err
		}
	}
	return nil
}

// failedOutput reads the last lines of the output of a unit that exited
// with a non-zero code while its worker or job is not terminal yet, for
// its status (Observed.Output); "" otherwise or when it cannot be read.
func (s *Scheduler) failedOutput(ctx context.Context, sg sighting) string {
	u := sg.o.Unit
	if !u.Exists || u.State.Phase != runtime.PhaseExited || u.State.ExitCode == 0 || sg.o.Phase.Terminal() {
		return ""
	}
	rc, err := s.rt.Logs(ctx, sg.unit, runtime.LogOptions{})
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, err := unitlog.ReadTail(rc, failedBytes)
	if err != nil {
		return ""
	}
	return unitlog.Lines(b, failedLines, failedBytes)
}

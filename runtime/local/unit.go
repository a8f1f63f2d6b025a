package local

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sync"

	"cairn.dev/cairn/runtime"
)

// record is a unit as state.json keeps it. It never holds the unit's
// environment or files.
type record struct {
	ID    string        `json:"id"`
	State runtime.State `json:"state"`
	// Supervisor is recorded before the command is launched: a record
	// without it was never launched.
	Supervisor procID `json:"supervisor,omitzero"`
	// Process is the command; its pid is also its process group.
	Process   procID `json:"process,omitzero"`
	CleanedUp bool   `json:"cleanedUp,omitempty"`
	// User is whom the command runs as; zero: the owner's own user.
	User unitUser `json:"user,omitzero"`
}

// unitUser is the user a unit runs as. Own: the uid is the unit's own,
// claimed from the range (uids.go) until its workspace is cleaned up.
type unitUser struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
	Own bool   `json:"own,omitempty"`
}

// credential returns the user to run as, or nil for the owner's own.
func (u unitUser) credential() *credential {
	if u == (unitUser{}) {
		return nil
	}
	return &credential{UID: u.UID, GID: u.GID}
}

// unit is one unit in memory. Lock order: Runtime.mu before unit.mu.
type unit struct {
	id  string
	dir string

	mu       sync.Mutex
	rec      record
	starting bool // Start is launching it; the monitor keeps off
	removed  bool
	changed  chan struct{} // closed and replaced on every change
}

func newUnit(id, dir string) *unit {
	return &unit{id: id, dir: dir, changed: make(chan struct{})}
}

// snapshot returns the record, a channel closed on the next change, and
// whether the unit was removed.
func (u *unit) snapshot() (record, <-chan struct{}, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.rec, u.changed, u.removed
}

// commit stores rec, persists it and wakes whoever waits for a change.
// The caller holds u.mu.
func (r *Runtime) commit(u *unit, rec record) {
	if rec == u.rec {
		return
	}
	if rec.State.Phase != u.rec.State.Phase {
		r.log.Info("unit changed phase", "unit", u.id, "phase", rec.State.Phase,
			"exitCode", rec.State.ExitCode, "reason", rec.State.Reason)
	}
	u.rec = rec
	r.persist(u)
	close(u.changed)
	u.changed = make(chan struct{})
}

// persist writes u.rec to state.json. The caller holds u.mu (or owns u).
func (r *Runtime) persist(u *unit) {
	if err := writeJSON(filepath.Join(u.dir, stateFile), u.rec); err != nil {
		r.log.Error("cannot persist unit state", "unit", u.id, "err", err)
	}
}

// refresh brings a unit that may still change up to date.
func (r *Runtime) refresh(u *unit) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.starting || u.removed || u.rec.State.Phase.Done() {
		return
	}
	r.commit(u, r.observe(u.dir, u.rec))
}

// observe works out where a Pending or Running unit is now, from what its
// supervisor wrote and from which of its processes still exist. The order
// matters: the supervisor writes exit.json before it ends, so once it is
// seen gone, an exit.json read afterwards is final.
func (r *Runtime) observe(dir string, rec record) record {
	if rec.State.Phase.Done() {
		return rec
	}
	supervised := alive(rec.Supervisor, r.boot)
	if rec.Process.Pid == 0 {
		var pf procFile
		if err := readJSON(filepath.Join(dir, procFileName), &pf); err == nil {
			rec.Process = pf.Process
			rec.State.Phase = runtime.PhaseRunning
			rec.State.Started = pf.Started
		}
	}
	var ex exitFile
	if err := readJSON(filepath.Join(dir, exitFileName), &ex); err == nil {
		return withExit(rec, ex)
	} else if !errors.Is(err, fs.ErrNotExist) {
		r.log.Error("cannot read the unit's exit status", "dir", dir, "err", err)
	}
	if supervised {
		return rec
	}
	lost := func(reason string) record {
		rec.State = runtime.State{Phase: runtime.PhaseLost, ExitCode: -1, Reason: reason,
			Started: rec.State.Started, Ended: r.opts.Now()}
		return rec
	}
	switch {
	case rec.Supervisor.Pid == 0:
		rec.State = runtime.State{Phase: runtime.PhaseFailed, ExitCode: -1,
			Reason: "the owner stopped before the unit was launched", Ended: r.opts.Now()}
		return rec
	case rec.Process.Pid == 0:
		return lost("the unit's supervisor ended before it started the command")
	case alive(rec.Process, r.boot):
		// The supervisor was killed but the command runs on: it can still
		// be killed and its log followed, but its exit code is lost.
		rec.State.Phase = runtime.PhaseRunning
		return rec
	default:
		return lost("the unit ended without a recorded exit status (its supervisor was killed)")
	}
}

// withExit applies the supervisor's exit record.
func withExit(rec record, ex exitFile) record {
	switch {
	case ex.StartError != "":
		rec.State = runtime.State{Phase: runtime.PhaseFailed, ExitCode: -1, Reason: ex.StartError, Ended: ex.Ended}
	case ex.Signal != "":
		rec.State = runtime.State{Phase: runtime.PhaseExited, ExitCode: ex.Code,
			Reason: "killed by signal " + ex.Signal, Started: rec.State.Started, Ended: ex.Ended}
	default:
		rec.State = runtime.State{Phase: runtime.PhaseExited, ExitCode: ex.Code,
			Started: rec.State.Started, Ended: ex.Ended}
	}
	return rec
}

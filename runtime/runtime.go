// Package runtime says where cairn's processes run: the container deployer's
// commands and the workers and jobs of events alike. A unit is one command
// with its own workspace, environment and log; a Runtime starts units, reports
// their state, kills them with everything they started, streams their logs
// and cleans up after them. Implementations: runtime/local (OS processes
// under the data dir); a cluster runtime can follow without changes to the
// callers.
//
// Units are never started twice: an ID once started stays taken until the
// unit is removed, even across restarts of the process that owns the
// runtime. Callers drive units level-based: they read a unit's State and act,
// and they may call Start again after a crash to learn (through ErrExists)
// that the unit already exists.
package runtime

import (
	"context"
	"errors"
	"io"
	"time"
)

// Errors returned by every Runtime. Check them with errors.Is.
var (
	// ErrNotFound: no unit has this ID (never started, or removed).
	ErrNotFound = errors.New("runtime: unit not found")
	// ErrExists: a unit with this ID was started and not removed.
	ErrExists = errors.New("runtime: unit already exists")
	// ErrInvalid: the spec (or a file name) is not acceptable; the wrapped
	// message says which field and why.
	ErrInvalid = errors.New("runtime: invalid spec")
	// ErrClosed: the Runtime was closed.
	ErrClosed = errors.New("runtime: closed")
)

// Runtime runs units. Implementations are safe for concurrent use, and
// every method returns ErrClosed once the implementation was closed.
type Runtime interface {
	// Start creates the unit's workspace, writes its files and starts its
	// command. It blocks until the command has started or failed to start.
	// A command that cannot be started (for example, the executable does not
	// exist) is not an error: Start returns a State with Phase Failed and a
	// Reason, and the ID stays taken. Errors: ErrInvalid for a bad spec,
	// ErrExists if the ID was ever started and not removed (the unit is
	// never started twice), ErrClosed, and ctx.Err() if ctx ends before the
	// start completes (the unit may then still start; its State tells).
	Start(ctx context.Context, spec Spec) (State, error)

	// State returns the unit's current state without blocking on the unit.
	// Errors: ErrNotFound.
	State(ctx context.Context, id string) (State, error)

	// Wait blocks until the unit is no longer Pending or Running and
	// returns its final state. Errors: ErrNotFound (also when the unit is
	// removed while waiting), and ctx.Err() with the latest state when ctx
	// ends first.
	Wait(ctx context.Context, id string) (State, error)

	// Kill stops the unit's whole process tree: a polite signal first, then
	// a forced kill after the runtime's grace period. It blocks until the
	// unit has ended. Killing a unit that has already ended is not an error.
	// Errors: ErrNotFound, ctx.Err() if ctx ends before the unit has ended.
	Kill(ctx context.Context, id string) error

	// Logs returns the unit's combined stdout and stderr from the start.
	// Without Follow the reader ends (io.EOF) at what was written so far;
	// with Follow it keeps streaming new output as it is written and ends
	// with io.EOF once the unit has ended and everything is read, or with
	// ctx.Err() when ctx ends. Close ends the stream at any time. Logs
	// outlive Cleanup; only Remove deletes them. Errors: ErrNotFound.
	Logs(ctx context.Context, id string, opts LogOptions) (io.ReadCloser, error)

	// ReadFile reads a file the unit left in its workspace (for example
	// exports it wrote), by a relative name that must stay inside the
	// workspace (symbolic links included). It does not wait for the unit.
	// Errors: ErrNotFound if the unit or the file does not exist or the
	// workspace was cleaned up; ErrInvalid for a name that is not a local
	// relative path, a file that is not a regular file, or one too large;
	// another error for a file that cannot be read, such as a symbolic link
	// leading out of the workspace.
	ReadFile(ctx context.Context, id, name string) ([]byte, error)

	// Cleanup removes the unit's workspace, killing the unit first (as Kill,
	// blocking) if it still runs. Its state and logs stay until Remove.
	// Cleaning up twice is not an error. Errors: ErrNotFound, ctx.Err().
	Cleanup(ctx context.Context, id string) error

	// Remove forgets the unit entirely (state, logs, workspace), killing it
	// first if it still runs; afterwards the ID may be started again. Used
	// when the unit's owner is deleted. Errors: ErrNotFound, ctx.Err().
	Remove(ctx context.Context, id string) error

	// List returns every known unit with its state, ordered by ID. It does
	// not block on units.
	List(ctx context.Context) ([]Unit, error)
}

// Spec describes a unit to start.
type Spec struct {
	// ID is chosen by the caller: lower-case letters, digits, '.', '-' and
	// '_', starting with a letter or digit, at most MaxIDLength characters.
	ID string `json:"id"`
	// Argv is the command and its arguments. Argv[0] is looked up in the
	// unit's PATH (from Env) unless it contains a slash.
	Argv []string `json:"argv"`
	// Env is the unit's whole environment, KEY=VALUE. Nothing else is
	// inherited from the process that owns the runtime.
	Env []string `json:"-"`
	// WorkspaceEnv, when set, names one more variable that the runtime sets
	// to the absolute path of the unit's workspace (for example
	// CAIRN_WORKSPACE), since only the runtime knows where that is.
	WorkspaceEnv string `json:"workspaceEnv,omitempty"`
	// Files are written into the unit's workspace before it starts, by
	// relative path (no absolute paths, no ".."), with mode 0600; parent
	// directories are created with mode 0700. Values may be secrets.
	Files map[string][]byte `json:"-"`
	// Dir is the working directory, relative to the workspace (created if
	// missing); empty means the workspace itself.
	Dir string `json:"dir,omitempty"`
}

// Phase is where a unit is in its life.
type Phase string

// The phases of a unit. Pending and Running are the only phases that change.
const (
	// PhasePending: the unit is being started.
	PhasePending Phase = "Pending"
	// PhaseRunning: the command runs.
	PhaseRunning Phase = "Running"
	// PhaseExited: the command ended; ExitCode holds its code. A command
	// ended by a signal has ExitCode 128+signal and a Reason naming it.
	PhaseExited Phase = "Exited"
	// PhaseFailed: the command could not be started; Reason says why.
	PhaseFailed Phase = "Failed"
	// PhaseLost: the unit vanished without a recorded exit status, for
	// example because it was killed together with its supervisor while the
	// owning process was down. Reason says what is known.
	PhaseLost Phase = "Lost"
)

// Done reports whether the phase is final. Unknown phases count as final,
// so that nobody waits forever on a value this version does not know.
func (p Phase) Done() bool {
	return p != PhasePending && p != PhaseRunning
}

// State is a unit's observed state.
type State struct {
	Phase Phase `json:"phase"`
	// ExitCode is meaningful in PhaseExited only.
	ExitCode int `json:"exitCode"`
	// Reason explains Failed, Lost and signal exits; empty otherwise.
	Reason  string    `json:"reason,omitempty"`
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
}

// Unit is one entry of List.
type Unit struct {
	ID    string `json:"id"`
	State State  `json:"state"`
}

// LogOptions selects how Logs reads.
type LogOptions struct {
	// Follow streams new output until the unit ends.
	Follow bool
}

// Package local runs units as OS processes on this machine, under a root
// directory (by default <data-dir>/runtime/):
//
//	<root>/lock                  held while a Runtime owns the root
//	<root>/units/<id>/state.json the unit's state, as the owner last saw it
//	<root>/units/<id>/proc.json  the running command (written by its supervisor)
//	<root>/units/<id>/exit.json  how it ended (written by its supervisor)
//	<root>/units/<id>/log        combined stdout and stderr
//	<root>/units/<id>/workspace/ the unit's working tree (removed by Cleanup)
//
// Files are 0600. Directories are 0700, except, when units run as users of
// their own (isolation.go), the root, units/ and each units/<id>/, which are
// 0711 so that a unit can pass through them to its workspace (owned by its
// user, 0700) without listing them; the root must then be reachable that way
// from / (New checks it). Each unit runs under a small supervisor
// (this binary, started again; see supervisor.go) that records its exit
// status, so units outlive the owning process: a new Runtime over the same
// root finds running units again, learns the real exit code of those that
// ended meanwhile, and reports as Lost those that vanished without one.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"cairn.dev/cairn/runtime"
)

// ErrLocked: another Runtime (in this or another process) owns the root.
var ErrLocked = errors.New("local: runtime root is in use by another owner")

// Options configures a Runtime.
type Options struct {
	// Root is the directory the runtime keeps everything in; required.
	// It is created (mode 0700) if missing.
	Root string
	// KillGrace is how long Kill waits after SIGTERM before it sends
	// SIGKILL; default 10s.
	KillGrace time.Duration
	// PollInterval is how often running units and followed logs are
	// checked; default 100ms.
	PollInterval time.Duration
	// Logger receives what the runtime does; default: discarded. It never
	// receives environment values or file contents.
	Logger *slog.Logger
	// Now is the clock for the times the owner records; default time.Now.
	Now func() time.Time
	// Isolation says whom units run as; the zero value gives each a uid
	// of its own and needs root (see Isolation).
	Isolation Isolation
}

// Runtime runs units as local processes. Create it with New; it is safe for
// concurrent use.
type Runtime struct {
	opts     Options
	log      *slog.Logger
	boot     string
	units    string // <root>/units
	trash    string // <root>/trash
	exe      string // the supervisor binary, shown in ps
	lockFile *os.File
	runAs    runAs
	uids     *uidPool // nil unless units get uids of their own

	mu       sync.Mutex
	byID     map[string]*unit
	children map[int]procID // supervisors this process started and has not reaped
	closed   bool
	inflight sync.WaitGroup // Starts in progress

	stop context.CancelFunc
	done chan struct{} // closed when the Runtime is closed
	wg   sync.WaitGroup
}

var _ runtime.Runtime = (*Runtime)(nil)

// New opens the root, takes its lock and recovers the units found there:
// units still running are watched again, units that ended while nobody
// watched get their recorded outcome, units that vanished are marked Lost.
// Errors: ErrLocked if another Runtime owns the root; ErrNotRoot,
// ErrBadIsolation or ErrUnreachable when units cannot be isolated as
// opts.Isolation asks; I/O errors.
func New(opts Options) (*Runtime, error) {
	if opts.Root == "" {
		return nil, errors.New("local: Options.Root is required")
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = 10 * time.Second
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 100 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "cairn"
	}
	r := &Runtime{
		opts:     opts,
		log:      opts.Logger.With("component", "runtime"),
		boot:     bootID(),
		units:    filepath.Join(opts.Root, "units"),
		trash:    filepath.Join(opts.Root, "trash"),
		exe:      exe,
		byID:     map[string]*unit{},
		children: map[int]procID{},
		done:     make(chan struct{}),
	}
	if r.runAs, err = resolve(opts.Isolation, os.Geteuid()); err != nil {
		return nil, err
	}
	if err := r.makeDirs(); err != nil {
		return nil, err
	}
	if err := r.takeLock(); err != nil {
		return nil, err
	}
	if err := r.recover(); err != nil {
		_ = r.lockFile.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	r.wg.Add(1)
	go r.monitor(ctx)
	return r, nil
}

// makeDirs creates the root's directories with their modes and, when units
// run as other users, checks that they can reach their workspaces and opens
// the uid claims.
func (r *Runtime) makeDirs() error {
	if r.runAs.none {
		for _, d := range []string{r.opts.Root, r.units, r.trash} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return fmt.Errorf("local: %w", err)
			}
			if err := os.Chmod(d, 0o700); err != nil {
				return fmt.Errorf("local: %w", err)
			}
		}
		return nil
	}
	for _, d := range []struct {
		path string
		perm os.FileMode
	}{{r.opts.Root, 0o711}, {r.units, 0o711}, {r.trash, 0o700}} {
		if err := secureDir(d.path, d.perm); err != nil {
			return err
		}
	}
	if err := checkReachable(r.opts.Root); err != nil {
		return err
	}
	if r.runAs.shared == nil {
		pool, err := openPool(r.runAs.uids, r.runAs.claimDir)
		if err != nil {
			return err
		}
		r.uids = pool
	}
	return nil
}

func (r *Runtime) takeLock() error {
	f, err := os.OpenFile(filepath.Join(r.opts.Root, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("%w: %s", ErrLocked, r.opts.Root)
		}
		return fmt.Errorf("local: lock %s: %w", r.opts.Root, err)
	}
	r.lockFile = f
	return nil
}

// recover loads every unit under the root and brings its state up to date.
func (r *Runtime) recover() error {
	if old, err := os.ReadDir(r.trash); err == nil {
		for _, e := range old {
			_ = os.RemoveAll(filepath.Join(r.trash, e.Name()))
		}
	}
	entries, err := os.ReadDir(r.units)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	for _, e := range entries {
		id := e.Name()
		if !e.IsDir() || runtime.ValidateID(id) != nil {
			r.log.Warn("ignoring a foreign entry in the runtime root", "name", id)
			continue
		}
		u := newUnit(id, filepath.Join(r.units, id))
		if err := readJSON(filepath.Join(u.dir, stateFile), &u.rec); err != nil || u.rec.ID != id {
			if halfMade(u.dir) {
				err := r.discardHalfMade(id, u.dir)
				if err == nil {
					r.log.Info("removed a unit whose reservation was cut short; it never ran", "unit", id)
					continue
				}
				r.log.Warn("cannot remove a half-made unit", "unit", id, "err", err)
			}
			// state.json is written before anything is launched, and
			// atomically: without it nothing ever ran.
			u.rec = record{ID: id, State: runtime.State{Phase: runtime.PhaseFailed, ExitCode: -1,
				Reason: "the unit's state could not be read; it was never started", Ended: r.opts.Now()}}
			r.persist(u)
		}
		r.byID[id] = u
		before := u.rec.State.Phase
		r.refresh(u)
		r.log.Info("recovered unit", "unit", id, "phase", u.rec.State.Phase, "was", before)
	}
	return nil
}

// Close stops watching units and releases the root. Running units are NOT
// killed: they outlive the owner by design, and a later Runtime over the
// same root finds them again. Close waits for Starts in progress and for the
// runtime's goroutines; operations after Close return runtime.ErrClosed.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.inflight.Wait()
	r.stop()
	close(r.done)
	r.wg.Wait()
	return r.lockFile.Close()
}

// get returns a known unit. Errors: runtime.ErrClosed, runtime.ErrNotFound.
func (r *Runtime) get(id string) (*unit, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, runtime.ErrClosed
	}
	u, ok := r.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", runtime.ErrNotFound, id)
	}
	return u, nil
}

// monitor brings running units up to date and reaps finished supervisors,
// every PollInterval, until ctx ends.
func (r *Runtime) monitor(ctx context.Context) {
	defer r.wg.Done()
	t := time.NewTicker(r.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		units := make([]*unit, 0, len(r.byID))
		for _, u := range r.byID {
			units = append(units, u)
		}
		children := make([]procID, 0, len(r.children))
		for _, c := range r.children {
			children = append(children, c)
		}
		r.mu.Unlock()
		for _, u := range units {
			r.refresh(u)
		}
		for _, c := range children {
			if !alive(c, r.boot) { // reaps it
				r.mu.Lock()
				delete(r.children, c.Pid)
				r.mu.Unlock()
			}
		}
	}
}

// State returns the unit's current state. Errors: runtime.ErrNotFound,
// runtime.ErrClosed.
func (r *Runtime) State(ctx context.Context, id string) (runtime.State, error) {
	u, err := r.get(id)
	if err != nil {
		return runtime.State{}, err
	}
	r.refresh(u)
	rec, _, removed := u.snapshot()
	if removed {
		return runtime.State{}, fmt.Errorf("%w: %s", runtime.ErrNotFound, id)
	}
	return rec.State, nil
}

// List returns every known unit, ordered by ID.
func (r *Runtime) List(ctx context.Context) ([]runtime.Unit, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, runtime.ErrClosed
	}
	units := make([]*unit, 0, len(r.byID))
	for _, u := range r.byID {
		units = append(units, u)
	}
	r.mu.Unlock()
	out := make([]runtime.Unit, 0, len(units))
	for _, u := range units {
		r.refresh(u)
		if rec, _, removed := u.snapshot(); !removed {
			out = append(out, runtime.Unit{ID: rec.ID, State: rec.State})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Wait blocks until the unit has ended. Errors: runtime.ErrNotFound (also
// if it is removed meanwhile), runtime.ErrClosed, ctx.Err().
func (r *Runtime) Wait(ctx context.Context, id string) (runtime.State, error) {
	u, err := r.get(id)
	if err != nil {
		return runtime.State{}, err
	}
	r.refresh(u)
	for {
		rec, changed, removed := u.snapshot()
		switch {
		case removed:
			return runtime.State{}, fmt.Errorf("%w: %s", runtime.ErrNotFound, id)
		case rec.State.Phase.Done():
			return rec.State, nil
		}
		select {
		case <-ctx.Done():
			return rec.State, ctx.Err()
		case <-r.done:
			return rec.State, runtime.ErrClosed
		case <-changed:
		}
	}
}

// Logs returns the unit's log; see runtime.Runtime. Errors:
// runtime.ErrNotFound, runtime.ErrClosed.
func (r *Runtime) Logs(ctx context.Context, id string, opts runtime.LogOptions) (io.ReadCloser, error) {
	u, err := r.get(id)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(u.dir, logFileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", runtime.ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("local: logs of %s: %w", id, err)
	}
	if !opts.Follow {
		return f, nil
	}
	return newFollower(ctx, r, u, f), nil
}

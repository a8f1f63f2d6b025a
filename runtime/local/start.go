package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"cairn.dev/cairn/runtime"
)

// Start creates the unit's workspace and files and starts its command under
// a supervisor; see runtime.Runtime. Any failure after the spec was accepted
// leaves a Failed unit with the reason rather than an error, so the caller
// always finds out through the unit's state.
func (r *Runtime) Start(ctx context.Context, spec runtime.Spec) (runtime.State, error) {
	if err := runtime.ValidateSpec(spec); err != nil {
		return runtime.State{}, err
	}
	u, err := r.reserve(spec.ID)
	if err != nil {
		return runtime.State{}, err
	}
	defer r.inflight.Done()
	if rec, _, _ := u.snapshot(); !rec.State.Phase.Done() { // Failed already when no uid was free
		err = r.launch(ctx, u, spec)
	}
	u.mu.Lock()
	u.starting = false
	u.mu.Unlock()
	if err != nil { // ctx ended: the monitor takes over from here
		rec, _, _ := u.snapshot()
		return rec.State, err
	}
	r.refresh(u)
	for { // the report came; the files it announced settle the phase
		rec, changed, _ := u.snapshot()
		if rec.State.Phase != runtime.PhasePending {
			return rec.State, nil
		}
		select {
		case <-ctx.Done():
			return rec.State, ctx.Err()
		case <-changed:
		}
	}
}

// reserve takes the unit's ID, on disk and in memory, or returns
// runtime.ErrExists. The unit is Pending and marked as starting, with the
// user it is to run as in its record; if no uid of its own is free, it is
// Failed at once.
func (r *Runtime) reserve(id string) (*unit, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, runtime.ErrClosed
	}
	if _, ok := r.byID[id]; ok {
		return nil, fmt.Errorf("%w: %s", runtime.ErrExists, id)
	}
	u := newUnit(id, filepath.Join(r.units, id))
	perm := os.FileMode(0o700)
	if !r.runAs.none {
		perm = 0o711 // its user passes through to the workspace
	}
	if err := os.Mkdir(u.dir, perm); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%w: %s", runtime.ErrExists, id)
		}
		return nil, fmt.Errorf("local: %w", err)
	}
	if err := os.Chmod(u.dir, perm); err != nil {
		_ = os.RemoveAll(u.dir)
		return nil, fmt.Errorf("local: %w", err)
	}
	u.rec = record{ID: id, State: runtime.State{Phase: runtime.PhasePending}}
	if err := r.recordUser(u); err != nil {
		_ = os.RemoveAll(u.dir)
		return nil, fmt.Errorf("local: %w", err)
	}
	u.starting = true
	r.byID[id] = u
	r.inflight.Add(1)
	return u, nil
}

// recordUser chooses whom u runs as and writes u's first record, which
// names that user: a uid of its own is claimed only together with the
// record (see uidPool.claim). With no free uid the record says Failed.
func (r *Runtime) recordUser(u *unit) error {
	write := func() error { return writeJSON(filepath.Join(u.dir, stateFile), u.rec) }
	switch {
	case r.runAs.shared != nil:
		u.rec.User = unitUser{UID: r.runAs.shared.UID, GID: r.runAs.shared.GID}
	case r.uids != nil:
		_, err := r.uids.claim(u.dir, func(uid uint32) error {
			u.rec.User = unitUser{UID: uid, GID: uid, Own: true}
			return write()
		})
		if !errors.Is(err, errNoUID) {
			return err
		}
		u.rec.User = unitUser{}
		u.rec.State = runtime.State{Phase: runtime.PhaseFailed, ExitCode: -1, Reason: err.Error(), Ended: r.opts.Now()}
	}
	return write()
}

// launch prepares the workspace and hands the command to a new supervisor.
// It records failures in the unit and returns an error only when ctx ends
// while it waits for the supervisor's report.
func (r *Runtime) launch(ctx context.Context, u *unit, spec runtime.Spec) error {
	rec, _, _ := u.snapshot()
	l, err := prepareLaunch(u, spec, rec.User.credential())
	if err != nil {
		return r.failLaunch(u, err)
	}
	sup, launchW, reportR, err := r.spawnSupervisor(u)
	if err != nil {
		return r.failLaunch(u, err)
	}
	defer launchW.Close()
	defer reportR.Close()

	// The supervisor is on record before the command is launched, so a
	// restarted owner can tell "never launched" from "launched".
	u.mu.Lock()
	rec = u.rec
	rec.Supervisor = sup
	r.commit(u, rec)
	u.mu.Unlock()

	if err := json.NewEncoder(launchW).Encode(l); err != nil {
		r.log.Warn("cannot hand the launch to the supervisor", "unit", u.id, "err", err)
	}
	_ = launchW.Close()
	stop := context.AfterFunc(ctx, func() { _ = reportR.SetReadDeadline(time.Now()) })
	defer stop()
	var rep report
	if err := json.NewDecoder(reportR).Decode(&rep); err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	// Whatever the report says (or if the supervisor died before it said
	// anything), proc.json and exit.json tell the same, durably.
	return nil
}

// failLaunch records in u that it Failed for reason (its message) and
// returns nil: launch's failures are told by the unit's state.
func (r *Runtime) failLaunch(u *unit, reason error) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	rec := u.rec
	rec.State = runtime.State{Phase: runtime.PhaseFailed, ExitCode: -1,
		Reason: reason.Error(), Ended: r.opts.Now()}
	r.commit(u, rec)
	return nil
}

// prepareLaunch prepares u's workspace (prepareWorkspace, given to user
// unless nil) and returns what the supervisor is to run: the spec's
// command, found on its PATH, with its environment, in its working
// directory. Errors: the workspace cannot be made, or the command is not
// found; the message says which.
func prepareLaunch(u *unit, spec runtime.Spec, user *credential) (launch, error) {
	ws := filepath.Join(u.dir, workspaceName)
	dir, err := prepareWorkspace(ws, spec, user)
	if err != nil {
		return launch{}, fmt.Errorf("cannot prepare the workspace: %w", err)
	}
	env := unitEnv(spec, ws)
	pathEnv := defaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv = v
		}
	}
	exe, err := lookPath(spec.Argv[0], pathEnv, dir)
	if err != nil {
		return launch{}, err
	}
	return launch{Path: exe, Argv: spec.Argv, Env: env, Dir: dir, User: user}, nil
}

// spawnSupervisor starts u's supervisor (supervisor.go) in a session of
// its own, its output appended to u's log, and notes it among the
// runtime's children (reaped by the monitor). It returns the supervisor
// and the pipe ends it reads its launch from (launchW) and writes its
// report to (reportR), which the caller closes. Errors: the log, /dev/null,
// a pipe or the process cannot be made; the message says which.
func (r *Runtime) spawnSupervisor(u *unit) (sup procID, launchW, reportR *os.File, err error) {
	logFile, err := os.OpenFile(filepath.Join(u.dir, logFileName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return sup, nil, nil, fmt.Errorf("cannot create the log: %w", err)
	}
	defer logFile.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return sup, nil, nil, fmt.Errorf("cannot open %s: %w", os.DevNull, err)
	}
	defer devnull.Close()
	launchR, launchW, err := os.Pipe()
	if err != nil {
		return sup, nil, nil, fmt.Errorf("cannot create a pipe: %w", err)
	}
	reportR, reportW, err := os.Pipe()
	if err != nil {
		_ = launchR.Close()
		_ = launchW.Close()
		return sup, nil, nil, fmt.Errorf("cannot create a pipe: %w", err)
	}
	p, err := os.StartProcess("/proc/self/exe", []string{r.exe, supervisorArg, u.dir}, &os.ProcAttr{
		Env:   []string{supervisorEnv + "=" + supervisorProtocol},
		Files: []*os.File{devnull, logFile, logFile, launchR, reportW},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	_ = launchR.Close()
	_ = reportW.Close()
	if err != nil {
		_ = launchW.Close()
		_ = reportR.Close()
		return sup, nil, nil, fmt.Errorf("cannot start the unit's supervisor: %w", err)
	}
	sup, err = identify(p.Pid, r.boot) // an unreaped child: always readable
	if err != nil {
		sup = procID{Pid: p.Pid, Boot: r.boot}
	}
	_ = p.Release() // reaped by the monitor, through alive
	r.mu.Lock()
	r.children[sup.Pid] = sup
	r.mu.Unlock()
	return sup, launchW, reportR, nil
}

// unitEnv is the unit's whole environment: the spec's, plus the workspace
// variable if the spec names one.
func unitEnv(spec runtime.Spec, ws string) []string {
	env := slices.Clone(spec.Env)
	if spec.WorkspaceEnv != "" {
		prefix := spec.WorkspaceEnv + "="
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, prefix) })
		env = append(env, prefix+ws)
	}
	return env
}

// prepareWorkspace creates the workspace (0700), writes the spec's files
// (0600, parents 0700) and the working directory, gives all of it to user
// (unless nil), and returns the working directory's absolute path. All
// writes go through an os.Root, so nothing lands outside the workspace.
func prepareWorkspace(ws string, spec runtime.Spec, user *credential) (string, error) {
	dir, err := fillWorkspace(ws, spec)
	if err != nil || user == nil {
		return dir, err
	}
	// Nobody but this process could write in the workspace yet (it is
	// 0700, root's, under root's directory), so the walk meets only what
	// was just written. The workspace itself is given last.
	err = filepath.WalkDir(ws, func(p string, _ fs.DirEntry, err error) error {
		if err != nil || p == ws {
			return err
		}
		return os.Lchown(p, int(user.UID), int(user.GID))
	})
	if err == nil {
		err = os.Lchown(ws, int(user.UID), int(user.GID))
	}
	if err != nil {
		return "", fmt.Errorf("give the workspace to uid %d: %w", user.UID, err)
	}
	return dir, nil
}

// fillWorkspace creates the workspace, its files and its working directory,
// as prepareWorkspace says.
func fillWorkspace(ws string, spec runtime.Spec) (string, error) {
	if err := os.Mkdir(ws, 0o700); err != nil {
		return "", err
	}
	if err := os.Chmod(ws, 0o700); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return "", err
	}
	defer root.Close()
	names := make([]string, 0, len(spec.Files))
	for name := range spec.Files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		clean := path.Clean(name)
		if d := path.Dir(clean); d != "." {
			if err := root.MkdirAll(d, 0o700); err != nil {
				return "", fmt.Errorf("file %q: %w", name, err)
			}
		}
		f, err := root.OpenFile(clean, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return "", fmt.Errorf("file %q: %w", name, err)
		}
		_, err = f.Write(spec.Files[name])
		if err == nil {
			err = f.Chmod(0o600) // whatever the umask
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", fmt.Errorf("file %q: %w", name, err)
		}
	}
	if spec.Dir == "" {
		return ws, nil
	}
	clean := path.Clean(spec.Dir)
	if err := root.MkdirAll(clean, 0o700); err != nil {
		return "", fmt.Errorf("dir %q: %w", spec.Dir, err)
	}
	return filepath.Join(ws, filepath.FromSlash(clean)), nil
}

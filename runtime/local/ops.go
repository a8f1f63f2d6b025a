package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"cairn.dev/cairn/runtime"
)

// maxReadFile bounds ReadFile.
const maxReadFile = 16 << 20

// Kill sends SIGTERM to the unit's process group, SIGKILL after KillGrace,
// and blocks until the unit has ended. Errors: runtime.ErrNotFound,
// runtime.ErrClosed, ctx.Err().
func (r *Runtime) Kill(ctx context.Context, id string) error {
	u, err := r.get(id)
	if err != nil {
		return err
	}
	return r.kill(ctx, u)
}

func (r *Runtime) kill(ctx context.Context, u *unit) error {
	var grace <-chan time.Time
	termSent := false
	for {
		r.refresh(u)
		rec, changed, removed := u.snapshot()
		switch {
		case removed:
			return fmt.Errorf("%w: %s", runtime.ErrNotFound, u.id)
		case rec.State.Phase.Done():
			return nil
		}
		// Still running after a refresh: the command's process group is
		// still the unit's (its supervisor has not collected the command, or
		// the command itself was seen alive).
		if pg := rec.Process.Pid; pg > 0 && !termSent {
			r.signalGroup(u.id, pg, syscall.SIGTERM)
			termSent = true
			t := time.NewTimer(r.opts.KillGrace)
			defer t.Stop()
			grace = t.C
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.done:
			return runtime.ErrClosed
		case <-changed:
		case <-grace:
			grace = nil
			r.refresh(u)
			if rec, _, _ := u.snapshot(); !rec.State.Phase.Done() {
				r.signalGroup(u.id, rec.Process.Pid, syscall.SIGKILL)
			}
		}
	}
}

func (r *Runtime) signalGroup(id string, pgid int, sig syscall.Signal) {
	r.log.Info("signalling unit", "unit", id, "signal", sig.String())
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		r.log.Error("cannot signal unit", "unit", id, "signal", sig.String(), "err", err)
	}
}

// Cleanup kills the unit if it runs and removes its workspace; its state and
// log stay. Errors: runtime.ErrNotFound, runtime.ErrClosed, ctx.Err().
func (r *Runtime) Cleanup(ctx context.Context, id string) error {
	u, err := r.get(id)
	if err != nil {
		return err
	}
	if err := r.kill(ctx, u); err != nil {
		return err
	}
	if err := r.reapOwn(u); err != nil {
		return err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.removed {
		return fmt.Errorf("%w: %s", runtime.ErrNotFound, id)
	}
	if err := os.RemoveAll(filepath.Join(u.dir, workspaceName)); err != nil {
		return fmt.Errorf("local: cleanup of %s: %w", id, err)
	}
	rec := u.rec
	rec.CleanedUp = true
	r.commit(u, rec)
	return r.releaseOwn(u.dir, rec.User)
}

// reapOwn kills whatever still runs as the unit's own uid (processes that
// left its process group), before the uid is given back. Errors: the
// reaper could not run.
func (r *Runtime) reapOwn(u *unit) error {
	rec, _, _ := u.snapshot()
	if !rec.User.Own || rec.CleanedUp {
		return nil
	}
	if err := reap(credential{UID: rec.User.UID, GID: rec.User.GID}); err != nil {
		return fmt.Errorf("local: cleanup of %s: %w", u.id, err)
	}
	return nil
}

// releaseOwn gives the unit's own uid back to the range.
func (r *Runtime) releaseOwn(dir string, user unitUser) error {
	if !user.Own || r.uids == nil {
		return nil
	}
	if err := r.uids.release(user.UID, dir); err != nil {
		return fmt.Errorf("local: release uid %d: %w", user.UID, err)
	}
	return nil
}

// Remove kills the unit if it runs and forgets it, log included; the ID can
// then be started again. Errors: runtime.ErrNotFound, runtime.ErrClosed,
// ctx.Err().
func (r *Runtime) Remove(ctx context.Context, id string) error {
	u, err := r.get(id)
	if err != nil {
		return err
	}
	if err := r.kill(ctx, u); err != nil {
		return err
	}
	if err := r.reapOwn(u); err != nil {
		return err
	}
	r.mu.Lock()
	if r.byID[id] != u {
		r.mu.Unlock()
		return fmt.Errorf("%w: %s", runtime.ErrNotFound, id)
	}
	u.mu.Lock()
	u.removed = true
	close(u.changed)
	u.changed = make(chan struct{})
	u.mu.Unlock()
	delete(r.byID, id)
	rec, _, _ := u.snapshot()
	// Moved out of the way at once, so that the ID is free while the files
	// are deleted.
	trash := filepath.Join(r.trash, id+"."+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Rename(u.dir, trash); err != nil {
		err = os.RemoveAll(u.dir)
		r.mu.Unlock()
		if err != nil {
			return fmt.Errorf("local: remove %s: %w", id, err)
		}
		return r.releaseOwn(u.dir, rec.User)
	}
	r.mu.Unlock()
	err = os.RemoveAll(trash)
	if err != nil {
		return fmt.Errorf("local: remove %s: %w", id, err)
	}
	return r.releaseOwn(u.dir, rec.User)
}

// ReadFile reads a file from the unit's workspace, through an os.Root so
// that no name or symbolic link leads outside it, and only regular files
// (never blocking on a FIFO the unit left). Errors: runtime.ErrNotFound,
// runtime.ErrInvalid, runtime.ErrClosed.
func (r *Runtime) ReadFile(ctx context.Context, id, name string) ([]byte, error) {
	clean, err := runtime.ValidateRelPath("name", name)
	if err != nil {
		return nil, err
	}
	u, err := r.get(id)
	if err != nil {
		return nil, err
	}
	if rec, _, _ := u.snapshot(); rec.CleanedUp {
		return nil, fmt.Errorf("%w: %s: workspace cleaned up", runtime.ErrNotFound, id)
	}
	root, err := os.OpenRoot(filepath.Join(u.dir, workspaceName))
	if err != nil {
		return nil, notFound(id, name, err)
	}
	defer root.Close()
	f, err := root.OpenFile(clean, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, notFound(id, name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, notFound(id, name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s: %q is not a regular file", runtime.ErrInvalid, id, name)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxReadFile+1))
	if err != nil {
		return nil, fmt.Errorf("local: read %s in %s: %w", name, id, err)
	}
	if len(b) > maxReadFile {
		return nil, fmt.Errorf("%w: %s: %q is larger than %d bytes", runtime.ErrInvalid, id, name, maxReadFile)
	}
	return b, nil
}

func notFound(id, name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s: %s", runtime.ErrNotFound, id, name)
	}
	return fmt.Errorf("local: read %s in %s: %w", name, id, err)
}

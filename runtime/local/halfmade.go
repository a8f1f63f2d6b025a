package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A unit is reserved in steps (reserve): its directory is made, its mode
// set, a uid claimed (a claim file naming the directory), its first record
// written to state.json.tmp and renamed to state.json. Nothing is launched
// before state.json exists. An owner killed between two of these steps
// leaves a half-made unit: a directory holding at most a state.json.tmp,
// and perhaps a claim naming it. Such a unit provably never ran, so
// recovery removes it and drops its claim, and a later Start of its ID
// starts it, rather than finding it Failed.

// halfMade reports whether the unit directory dir holds nothing but what a
// reservation cut short leaves (nothing, or state.json.tmp). A directory
// that cannot be read is not taken for half-made.
func halfMade(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.Name() != stateFile+".tmp" {
			return false
		}
	}
	return true
}

// discardHalfMade removes the half-made unit directory dir (moved into the
// trash first, so that its ID is free at once) and drops any uid claim
// naming it. It blocks on the claims' lock. Errors: I/O errors.
func (r *Runtime) discardHalfMade(id, dir string) error {
	trash := filepath.Join(r.trash, id+"."+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Rename(dir, trash); err != nil {
		return fmt.Errorf("local: remove the half-made unit %s: %w", id, err)
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("local: remove the half-made unit %s: %w", id, err)
	}
	if r.uids == nil {
		return nil
	}
	return r.uids.releaseDir(dir)
}

// releaseDir drops every claim naming unitDir (a unit whose record never
// named its uid). It blocks on the lock. Errors: I/O errors.
func (p *uidPool) releaseDir(unitDir string) error {
	unlock, err := p.lock()
	if err != nil {
		return err
	}
	defer unlock()
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return fmt.Errorf("local: uid claims: %w", err)
	}
	for _, e := range entries {
		if _, err := strconv.ParseUint(e.Name(), 10, 32); err != nil {
			continue // the lock, a temporary file
		}
		path := filepath.Join(p.dir, e.Name())
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("local: uid claims: %w", err)
		}
		if strings.TrimSpace(string(b)) == unitDir {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("local: uid claims: %w", err)
			}
		}
	}
	return nil
}

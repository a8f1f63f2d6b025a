package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// procID names one process for good: its pid alone could be reused by an
// unrelated process after it ends, so the start time (clock ticks since
// boot, from /proc/<pid>/stat) and the boot it belongs to come with it.
type procID struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
	Boot  string `json:"boot"`
}

// procStat reads a process's state letter and start time from /proc.
func procStat(pid int) (start uint64, state byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses itself: the fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 > len(b) {
		return 0, 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(b[i+2:]))
	// fields[0] is field 3 (state); starttime is field 22.
	if len(fields) < 20 || fields[0] == "" {
		return 0, 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	start, err = strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("unexpected /proc/%d/stat: %w", pid, err)
	}
	return start, fields[0][0], nil
}

// identify returns the procID of a live process (or an unreaped child).
func identify(pid int, boot string) (procID, error) {
	start, _, err := procStat(pid)
	if err != nil {
		return procID{}, err
	}
	return procID{Pid: pid, Start: start, Boot: boot}, nil
}

// alive reports whether the process p still runs. A zombie counts as
// ended; if it is a child of this process it is reaped here (its identity
// was checked first, so no other process's status is ever taken).
func alive(p procID, boot string) bool {
	if p.Pid <= 0 || p.Boot != boot {
		return false
	}
	start, state, err := procStat(p.Pid)
	if err != nil || start != p.Start {
		return false
	}
	if state == 'Z' || state == 'X' {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(p.Pid, &ws, syscall.WNOHANG, nil) // ECHILD: not ours
		return false
	}
	return true
}

// bootID identifies the running kernel's boot: after a reboot no process
// recorded before it can still exist.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// defaultPath is searched when a unit's environment has no PATH, as the C
// library does.
const defaultPath = "/usr/bin:/bin"

// lookPath finds the executable a unit's argv[0] names: a name with a slash
// is taken as is (relative to the working directory dir), any other name is
// searched in pathEnv. The error is a reason fit for a Failed state.
func lookPath(file, pathEnv, dir string) (string, error) {
	if strings.Contains(file, "/") {
		p := file
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("executable %q %w", file, err)
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		if p := filepath.Join(d, file); executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("executable %q not found in PATH %q", file, pathEnv)
}

var errNotExecutable = errors.New("is not an executable file")

func executable(p string) error {
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return errors.New("does not exist")
	}
	if err != nil {
		return fmt.Errorf("cannot be read: %w", err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errNotExecutable
	}
	return nil
}

// writeJSON writes v to path atomically (a temporary file in the same
// directory, synced, then renamed over path), with mode 0600.
func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}

// readJSON reads what writeJSON wrote. A missing file is fs.ErrNotExist.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

package local

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A unit of its own uid holds a claim: <claimDir>/<uid>, a file naming the
// unit's directory, created before the unit's record names the uid. Claims
// are shared by every runtime on the machine (each has its own root and
// may share the range), and they outlive restarts. A claim is stale, and
// its uid free again, once the unit it names no longer holds the uid: its
// directory is gone (removed, or a whole root deleted), or its record says
// the workspace was cleaned up. Claims are taken and checked under an
// exclusive lock on <claimDir>/lock.
//
// A uid is also never given while any process runs as it (a unit's
// process that escaped its process group, or something the range should
// not have held).

// errNoUID: every uid of the range is held.
var errNoUID = errors.New("no free uid")

// uidPool hands out uids of a range to units.
type uidPool struct {
	r    UIDRange
	dir  string
	next uint32 // where the next search starts
}

// openPool creates (or checks) the claim directory, 0700 and root's.
// Errors: those of secureDir.
func openPool(r UIDRange, dir string) (*uidPool, error) {
	if err := secureDir(dir, 0o700); err != nil {
		return nil, err
	}
	return &uidPool{r: r, dir: dir, next: r.First}, nil
}

// claim takes a free uid for the unit whose directory is unitDir and calls
// record(uid) while it still holds the lock, so that the unit's record
// names the uid before any other runtime looks at the claim. It blocks on
// the lock while another runtime claims. Errors: errNoUID, record's error
// (the claim is then dropped), I/O errors.
func (p *uidPool) claim(unitDir string, record func(uid uint32) error) (uint32, error) {
	unlock, err := p.lock()
	if err != nil {
		return 0, err
	}
	defer unlock()
	busy := processUIDs()
	n := uint64(p.r.Last-p.r.First) + 1
	for i := uint64(0); i < n; i++ {
		uid := p.r.First + uint32((uint64(p.next-p.r.First)+i)%n)
		if busy[uid] || p.held(uid) {
			continue
		}
		path := p.path(uid)
		if err := writeFileAtomic(path, []byte(unitDir+"\n")); err != nil {
			return 0, err
		}
		if err := record(uid); err != nil {
			_ = os.Remove(path)
			return 0, err
		}
		p.next = uid + 1
		if p.next > p.r.Last || p.next < p.r.First {
			p.next = p.r.First
		}
		return uid, nil
	}
	return 0, fmt.Errorf("%w in --runtime-uids %s: every uid is held by a unit (or runs a process)", errNoUID, p.r)
}

// release drops the claim of uid if unitDir holds it. It blocks on the
// lock. Errors: I/O errors.
func (p *uidPool) release(uid uint32, unitDir string) error {
	unlock, err := p.lock()
	if err != nil {
		return err
	}
	defer unlock()
	b, err := os.ReadFile(p.path(uid))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(b)) != unitDir {
		return nil
	}
	return os.Remove(p.path(uid))
}

// held reports whether uid's claim names a unit that still holds it. The
// caller holds the lock.
func (p *uidPool) held(uid uint32) bool {
	b, err := os.ReadFile(p.path(uid))
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		return true // unreadable: do not take it
	}
	var rec record
	if err := readJSON(filepath.Join(strings.TrimSpace(string(b)), stateFile), &rec); err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	return rec.User.Own && rec.User.UID == uid && !rec.CleanedUp
}

func (p *uidPool) path(uid uint32) string {
	return filepath.Join(p.dir, strconv.FormatUint(uint64(uid), 10))
}

// lock takes the claims' exclusive lock, blocking until it has it.
func (p *uidPool) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(p.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("local: uid claims: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("local: uid claims: %w", err)
	}
	return func() { _ = f.Close() }, nil
}

// processUIDs returns every uid (real, effective, saved or filesystem) a
// process currently runs as.
func processUIDs() map[uint32]bool {
	out := map[uint32]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		f, err := os.Open("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
				for _, s := range strings.Fields(rest) {
					if id, err := strconv.ParseUint(s, 10, 32); err == nil {
						out[uint32(id)] = true
					}
				}
				break
			}
		}
		_ = f.Close()
	}
	return out
}

// writeFileAtomic writes data to path through a renamed temporary file,
// mode 0600.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// reaperArg starts this binary as a reaper (see reap).
const reaperArg = "cairn-runtime-reaper"

// reap kills every process running as c (a unit's own uid, so nothing
// else): it starts this binary again as root, which switches to c and
// sends SIGKILL to every process it may signal (kill(-1), which the kernel
// applies to all at once, so a process that forks cannot escape). It
// blocks until the reaper has ended. Errors: the reaper could not run.
func reap(c credential) error {
	p, err := os.StartProcess("/proc/self/exe", []string{reaperArg, reaperArg,
		strconv.FormatUint(uint64(c.UID), 10), strconv.FormatUint(uint64(c.GID), 10)},
		&os.ProcAttr{Env: []string{supervisorEnv + "=" + supervisorProtocol}})
	if err != nil {
		return fmt.Errorf("local: start the reaper of uid %d: %w", c.UID, err)
	}
	st, err := p.Wait()
	if err != nil {
		return fmt.Errorf("local: reaper of uid %d: %w", c.UID, err)
	}
	if !st.Success() {
		return fmt.Errorf("local: reaper of uid %d: %v", c.UID, st)
	}
	return nil
}

// runReaper is the reaper's body: args are the uid and gid. It returns the
// process's exit code.
func runReaper(args []string) int {
	uid, err1 := strconv.Atoi(args[0])
	gid, err2 := strconv.Atoi(args[1])
	if err1 != nil || err2 != nil || uid == 0 {
		return 2
	}
	if syscall.Setgroups(nil) != nil || syscall.Setgid(gid) != nil || syscall.Setuid(uid) != nil {
		return 3
	}
	if err := syscall.Kill(-1, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return 4
	}
	return 0
}

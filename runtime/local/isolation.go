package local

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Units cannot read cairn. When the owning process runs as root, every
// unit's command runs as an unprivileged user: by default a uid of its own
// (and the gid of the same number, with no supplementary groups), claimed
// from a range machine-wide (uids.go), so that a unit can read neither the
// owner's files nor another unit's workspace; or, on request, one named user
// shared by every unit. The unit's workspace and files belong to that user;
// its record (state, process, exit status, log) stays root's, mode 0600.
//
// A process that is not root cannot switch users: it refuses to start
// units at all unless the operator opts out (Isolation.None), accepting that
// units run as the owner's own user and can read what it can.

// DefaultUIDs is the range units' uids are taken from by default: above the
// uids of ordinary users (and of the subordinate uids container tools give
// the first users), below nobody's 65534-based conventions of 32-bit uids.
var DefaultUIDs = UIDRange{First: 200000, Last: 265535}

// DefaultRoot is a runtime root units can reach when cairn runs as root
// (its default data dir, under /root, is out of their reach).
const DefaultRoot = "/var/lib/cairn/runtime"

// DefaultClaimDir is where the uids held by units are recorded, one file
// per uid, for every runtime on the machine.
const DefaultClaimDir = "/var/lib/cairn/uids"

// Isolation says whom units run as. The zero value gives each unit a uid
// of its own from DefaultUIDs, and needs the owning process to run as root.
type Isolation struct {
	// None runs units as the owning process's own user: they can read
	// everything it can (the data dir, its tokens and keys). An explicit
	// opt-out (--runtime-isolation=none); User and UIDs must be unset.
	None bool
	// User, when set, runs every unit as this user (name or numeric uid)
	// and its primary group. Units then share a uid and can read each
	// other's workspaces. It must exist and must not be root.
	User string
	// UIDs is the range each unit gets a uid of its own from; zero means
	// DefaultUIDs. No user of /etc/passwd nor group of /etc/group may be in
	// it.
	UIDs UIDRange
	// ClaimDir records which uid each unit holds; default DefaultClaimDir.
	// Every runtime whose range overlaps another's must share it.
	ClaimDir string
}

// UIDRange is an inclusive range of uids (and gids of the same numbers).
type UIDRange struct{ First, Last uint32 }

func (r UIDRange) String() string { return fmt.Sprintf("%d-%d", r.First, r.Last) }

// Errors of isolation. Check them with errors.Is.
var (
	// ErrNotRoot: units are to be isolated but the owner is not root.
	ErrNotRoot = errors.New("local: units cannot be isolated")
	// ErrBadIsolation: an Isolation (or its flags) is not acceptable; the
	// message names the flag and the fix.
	ErrBadIsolation = errors.New("local: bad runtime isolation")
	// ErrUnreachable: units could not reach their workspaces.
	ErrUnreachable = errors.New("local: units cannot reach the runtime dir")
)

// ParseUIDRange reads FIRST-LAST. Errors: ErrBadIsolation naming
// --runtime-uids.
func ParseUIDRange(s string) (UIDRange, error) {
	bad := func(why string) (UIDRange, error) {
		return UIDRange{}, fmt.Errorf("%w: --runtime-uids %q %s; give FIRST-LAST, such as %s", ErrBadIsolation, s, why, DefaultUIDs)
	}
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		return bad("has no '-'")
	}
	first, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 32)
	last, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 32)
	switch {
	case err1 != nil || err2 != nil:
		return bad("is not two numbers")
	case first == 0:
		return bad("includes root (uid 0)")
	case first > last:
		return bad("ends before it starts")
	case last >= 1<<32-1:
		return bad("includes the invalid uid 4294967295")
	}
	return UIDRange{First: uint32(first), Last: uint32(last)}, nil
}

// runAs is an Isolation checked against this machine.
type runAs struct {
	none     bool
	shared   *credential // every unit as this user
	uids     UIDRange    // otherwise a uid each, from here
	claimDir string
}

// credential is a user a unit runs as.
type credential struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// resolve checks iso against the machine: the owner's user (euid), the
// user database. It blocks on nothing but reading /etc. Errors: ErrNotRoot,
// ErrBadIsolation.
func resolve(iso Isolation, euid int) (runAs, error) {
	if iso.None {
		if iso.User != "" || iso.UIDs != (UIDRange{}) {
			return runAs{}, fmt.Errorf("%w: --runtime-isolation=none runs units as cairn's own user; drop --runtime-user and --runtime-uids", ErrBadIsolation)
		}
		return runAs{none: true}, nil
	}
	if euid != 0 {
		return runAs{}, fmt.Errorf("%w: cairn runs as uid %d, not root, so it cannot run units as users of their own, "+
			"and they could read its data dir (tokens, keys); run cairn as root, or pass --runtime-isolation=none "+
			"to accept that units run as uid %d", ErrNotRoot, euid, euid)
	}
	ra := runAs{claimDir: iso.ClaimDir}
	if ra.claimDir == "" {
		ra.claimDir = DefaultClaimDir
	}
	if iso.User != "" {
		if iso.UIDs != (UIDRange{}) {
			return runAs{}, fmt.Errorf("%w: give --runtime-user or --runtime-uids, not both", ErrBadIsolation)
		}
		c, err := lookupUser(iso.User)
		if err != nil {
			return runAs{}, err
		}
		ra.shared = &c
		return ra, nil
	}
	ra.uids = iso.UIDs
	if ra.uids == (UIDRange{}) {
		ra.uids = DefaultUIDs
	}
	if ra.uids.First == 0 || ra.uids.First > ra.uids.Last || ra.uids.Last == 1<<32-1 {
		return runAs{}, fmt.Errorf("%w: --runtime-uids %s is not a range of unprivileged uids", ErrBadIsolation, ra.uids)
	}
	if err := checkUnused(ra.uids, "/etc/passwd", "user"); err != nil {
		return runAs{}, err
	}
	if err := checkUnused(ra.uids, "/etc/group", "group"); err != nil {
		return runAs{}, err
	}
	return ra, nil
}

// lookupUser finds the user units share. Errors: ErrBadIsolation naming
// --runtime-user.
func lookupUser(name string) (credential, error) {
	u, err := user.Lookup(name)
	if _, nerr := strconv.ParseUint(name, 10, 32); err != nil && nerr == nil {
		u, err = user.LookupId(name)
	}
	if err != nil {
		return credential{}, fmt.Errorf("%w: --runtime-user %q: no such user; create it (useradd --system --no-create-home --shell /usr/sbin/nologin %s) or name another", ErrBadIsolation, name, name)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return credential{}, fmt.Errorf("%w: --runtime-user %q has uid %q and gid %q, not numbers", ErrBadIsolation, name, u.Uid, u.Gid)
	}
	if uid == 0 || gid == 0 {
		return credential{}, fmt.Errorf("%w: --runtime-user %q is root (uid %d, gid %d): units would read everything; name an unprivileged user, or pass --runtime-isolation=none to say so", ErrBadIsolation, name, uid, gid)
	}
	return credential{UID: uint32(uid), GID: uint32(gid)}, nil
}

// checkUnused refuses a range holding an id of the database file (the third
// field of /etc/passwd or /etc/group lines): a unit given it would read that
// user's (or group's) files. A missing file holds nothing. Errors:
// ErrBadIsolation.
func checkUnused(r UIDRange, path, what string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("local: check --runtime-uids against %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 3 {
			continue
		}
		id, err := strconv.ParseUint(fields[2], 10, 32)
		if err == nil && uint32(id) >= r.First && uint32(id) <= r.Last {
			return fmt.Errorf("%w: --runtime-uids %s holds id %d of the %s %q in %s; units given it could read its files: choose a range no user or group is in, such as %s",
				ErrBadIsolation, r, id, what, fields[0], path, DefaultUIDs)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("local: check --runtime-uids against %s: %w", path, err)
	}
	return nil
}

// secureDir creates dir with mode perm (and its missing parents with 0711,
// so that a runtime dir can be made next to it), or checks an existing one:
// it must be a directory, not a symbolic link, owned by this process's
// user, and gets mode perm. Errors: ErrUnreachable naming the directory and
// the fix, or I/O errors.
func secureDir(dir string, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("local: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory but a symbolic link or a file; name a directory", ErrUnreachable, dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%w: %s belongs to uid %d, not to cairn's uid %d, which could change it under cairn; name a directory of cairn's own",
			ErrUnreachable, dir, st.Uid, os.Geteuid())
	}
	if err := os.Chmod(dir, perm); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	return nil
}

// checkReachable makes sure units, running as users with no group of
// root's, can reach dir: dir and each directory above it must be owned by
// root, writable by nobody else (or sticky, as /tmp), and searchable by
// others. It does not block. Errors: ErrUnreachable naming the first
// directory that fails, its mode and the fix.
func checkReachable(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	for d := real; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("local: %w", err)
		}
		m := fi.Mode()
		st, _ := fi.Sys().(*syscall.Stat_t)
		switch {
		case st != nil && st.Uid != 0:
			return fmt.Errorf("%w %s: %s belongs to uid %d, who could redirect it; use a directory whose parents all belong to root, such as /var/lib/cairn/runtime (--runtime-dir)",
				ErrUnreachable, abs, d, st.Uid)
		case m.Perm()&0o022 != 0 && m&fs.ModeSticky == 0:
			return fmt.Errorf("%w %s: %s has mode %04o, writable by others who could redirect it; run 'chmod go-w %s' or use another --runtime-dir",
				ErrUnreachable, abs, d, m.Perm(), d)
		case m.Perm()&0o001 == 0:
			return fmt.Errorf("%w %s: %s has mode %04o, which units (other users) cannot pass through; run 'chmod o+x %s' or use another --runtime-dir, such as /var/lib/cairn/runtime",
				ErrUnreachable, abs, d, m.Perm(), d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

package local_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/runtime"
	"cairn.dev/cairn/runtime/local"
)

// needRoot skips tests of users of their own where they cannot exist.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("units run as users of their own only when the owner is root")
	}
}

// uidOf waits for the first line of a unit's log, its uid, and returns it.
func uidOf(t *testing.T, rt runtime.Runtime, id string) int {
	t.Helper()
	var uid int
	testkit.EventuallyNil(t, 20*time.Second, "the uid "+id+" prints", func() error {
		line, _, ok := strings.Cut(readLogs(t, rt, id), "\n")
		if !ok {
			return errors.New("no line yet")
		}
		var err error
		uid, err = strconv.Atoi(line)
		return err
	})
	return uid
}

func ownerOf(t *testing.T, path string) uint32 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Uid
}

// The attack, and its relatives: a unit reads nothing of its
// owner's (a token beside the runtime root, the unit's own record, the
// list of units) nor another unit's workspace, and still reads and writes
// its own files.
func TestLocal_UnitsCannotReadTheOwnerNorEachOther(t *testing.T) {
	needRoot(t)
	base := t.TempDir()
	root := filepath.Join(base, "runtime")
	token := filepath.Join(base, "admin.token") // $CAIRN_WORKSPACE/../../../../admin.token
	if err := os.WriteFile(token, []byte("admin-secret-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, root, 5*time.Second)
	gate := filepath.Join(t.TempDir(), "gate")
	a := runtime.Spec{ID: "a", Argv: []string{"sh", "-c", `id -u; echo a-private > mine; ` + gateScript(0)},
		Env: unitEnv("GATE=" + gate), Files: map[string][]byte{"key": []byte("a-key")}}
	mustStart(t, rt, a)
	uidA := uidOf(t, rt, "a")

	b := shSpec("b", `id -u
cat "$CAIRN_WORKSPACE/../../../../admin.token"; echo "token=$?"
cat ../../a/workspace/mine; echo "mine=$?"
cat ../../a/workspace/key; echo "key=$?"
cat ../state.json; echo "state=$?"
ls ../..; echo "list=$?"
echo written > own && cat own; echo "own=$?"
cat given; echo "given=$?"`)
	b.WorkspaceEnv = "CAIRN_WORKSPACE"
	b.Files = map[string][]byte{"given": []byte("b-file")}
	mustStart(t, rt, b)
	if st := mustWait(t, rt, "b"); st.Phase != runtime.PhaseExited {
		t.Fatalf("b: %+v", st)
	}
	out := readLogs(t, rt, "b")
	uidB := uidOf(t, rt, "b")
	touch(t, gate)
	mustWait(t, rt, "a")

	if strings.Contains(out, "admin-secret-token") || strings.Contains(out, "a-private") || strings.Contains(out, "a-key") {
		t.Fatalf("unit b read what is not its own:\n%s", out)
	}
	for _, denied := range []string{"token", "mine", "key", "state", "list"} {
		if strings.Contains(out, denied+"=0\n") {
			t.Errorf("%s: allowed, want denied:\n%s", denied, out)
		}
	}
	if n := strings.Count(out, "Permission denied"); n < 5 {
		t.Errorf("%d Permission denied, want 5:\n%s", n, out)
	}
	for _, want := range []string{"written\nown=0\n", "b-file"} {
		if !strings.Contains(out, want) {
			t.Errorf("unit b could not use its own workspace (want %q):\n%s", want, out)
		}
	}
	if uidA == uidB || uidA < int(local.DefaultUIDs.First) || uidB > int(local.DefaultUIDs.Last) || uidB < int(local.DefaultUIDs.First) {
		t.Fatalf("uids %d and %d, want two different uids of %s", uidA, uidB, local.DefaultUIDs)
	}
	ws := filepath.Join(root, "units", "b", "workspace")
	for _, p := range []string{ws, filepath.Join(ws, "given")} {
		if got := ownerOf(t, p); int(got) != uidB {
			t.Errorf("%s belongs to %d, want the unit's uid %d", p, got, uidB)
		}
	}
	for _, p := range []string{"state.json", "log", "exit.json"} {
		if got := ownerOf(t, filepath.Join(root, "units", "b", p)); got != 0 {
			t.Errorf("%s belongs to %d, want root", p, got)
		}
	}
}

// Claims outlive the owner: a unit that holds its uid (it ended, but its
// workspace, which belongs to the uid, is still there) when its owner
// restarts keeps it to itself, and a second runtime on the same machine
// never gets it either. Once cleaned up, the uid is free again.
func TestLocal_LiveUnitsKeepTheirUIDsAcrossRestart(t *testing.T) {
	needRoot(t)
	root, dir := t.TempDir(), t.TempDir()
	firstGate, gate := filepath.Join(dir, "first"), filepath.Join(dir, "gate")
	killOwner(t, startOwner(t, root, "first", `id -u; `+gateScript(0), unitEnv("GATE="+firstGate)))

	rt := newRuntime(t, root, 5*time.Second)
	first := uidOf(t, rt, "first")
	touch(t, firstGate)
	mustWait(t, rt, "first") // no process runs as its uid any more
	other := newRuntime(t, t.TempDir(), 5*time.Second)
	uids := map[int]string{first: "first"}
	for i, r := range []runtime.Runtime{rt, other, rt} {
		id := "next-" + strconv.Itoa(i)
		mustStart(t, r, shSpec(id, `id -u; `+gateScript(0), "GATE="+gate))
		uid := uidOf(t, r, id)
		if was, ok := uids[uid]; ok {
			t.Fatalf("%s got uid %d, which %s still holds", id, uid, was)
		}
		uids[uid] = id
	}
	touch(t, gate)
	if err := rt.Cleanup(testkit.Context(t), "first"); err != nil {
		t.Fatal(err)
	}
	// Another test process may claim the uid meanwhile, for a unit of its own.
	claim, err := os.ReadFile(filepath.Join(local.DefaultClaimDir, strconv.Itoa(first)))
	if !errors.Is(err, os.ErrNotExist) && strings.TrimSpace(string(claim)) == filepath.Join(root, "units", "first") {
		t.Fatalf("uid %d is still claimed by its unit after the cleanup (%v)", first, err)
	}
}

// A unit's process that left its process group (a daemon) is still the
// unit's: Cleanup kills it before the uid is given back.
func TestLocal_CleanupKillsWhatTheUnitLeftRunning(t *testing.T) {
	needRoot(t)
	rt := newRuntime(t, t.TempDir(), 5*time.Second)
	pidFile := filepath.Join(testkit.UnitWritableDir(t), "pid")
	mustStart(t, rt, shSpec("daemon", `setsid sh -c 'echo $$ > "$PIDFILE"; exec sleep 300' </dev/null >/dev/null 2>&1 &
while [ ! -s "$PIDFILE" ]; do sleep 0.01; done`, "PIDFILE="+pidFile))
	mustWait(t, rt, "daemon")
	escaped := readPids(t, pidFile, 1)[0]
	if processGone(escaped) {
		t.Fatal("the escaped process is gone before the cleanup: the test proves nothing")
	}
	if err := rt.Cleanup(testkit.Context(t), "daemon"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "the escaped process to be killed", func() bool { return processGone(escaped) })
}

// --runtime-user: every unit runs as that user.
func TestLocal_RuntimeUserRunsEveryUnitAsThatUser(t *testing.T) {
	needRoot(t)
	testkit.UnitReachable(t)
	rt, err := local.New(local.Options{Root: t.TempDir(), PollInterval: 20 * time.Millisecond, Isolation: local.Isolation{User: "nobody"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	for _, id := range []string{"one", "two"} {
		mustStart(t, rt, shSpec(id, `id -u; id -G`))
		mustWait(t, rt, id)
		if got := readLogs(t, rt, id); got != "65534\n65534\n" {
			t.Fatalf("%s ran as %q, want nobody (65534) with no other group", id, got)
		}
	}
}

// A runtime root units cannot pass through to is refused at start, naming
// the directory, its mode and the fix; so is a symbolic link.
func TestLocal_UnreachableRuntimeDirIsRefused(t *testing.T) {
	needRoot(t)
	testkit.UnitReachable(t)
	private := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := local.New(local.Options{Root: filepath.Join(private, "runtime")})
	if !errors.Is(err, local.ErrUnreachable) || !strings.Contains(err.Error(), private+" has mode 0700") ||
		!strings.Contains(err.Error(), "chmod o+x "+private) {
		t.Fatalf("New under a 0700 dir: %v, want ErrUnreachable naming %s, its mode and chmod o+x", err, private)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	if _, err := local.New(local.Options{Root: link}); !errors.Is(err, local.ErrUnreachable) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("New on a symbolic link: %v, want ErrUnreachable saying so", err)
	}
}

// A range whose every uid is held fails the next unit with the reason,
// rather than sharing a uid.
func TestLocal_NoFreeUIDFailsTheUnit(t *testing.T) {
	needRoot(t)
	testkit.UnitReachable(t)
	one := uint32(3_000_000_000 + time.Now().UnixNano()%1_000_000) // a uid of its own to this test
	rt, err := local.New(local.Options{Root: t.TempDir(), PollInterval: 20 * time.Millisecond,
		Isolation: local.Isolation{UIDs: local.UIDRange{First: one, Last: one}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	mustStart(t, rt, shSpec("holder", "id -u"))
	if st := mustWait(t, rt, "holder"); st.ExitCode != 0 || readLogs(t, rt, "holder") != strconv.Itoa(int(one))+"\n" {
		t.Fatalf("holder: %+v, log %q", st, readLogs(t, rt, "holder"))
	}
	st := mustStart(t, rt, shSpec("second", "id -u"))
	if st.Phase != runtime.PhaseFailed || !strings.Contains(st.Reason, "no free uid") {
		t.Fatalf("second unit: %+v, want Failed for want of a uid", st)
	}
	if err := rt.Cleanup(testkit.Context(t), "holder"); err != nil {
		t.Fatal(err)
	}
	mustStart(t, rt, shSpec("third", "id -u"))
	if st := mustWait(t, rt, "third"); st.ExitCode != 0 || readLogs(t, rt, "third") != strconv.Itoa(int(one))+"\n" {
		t.Fatalf("after the holder's cleanup: %+v, log %q; want its uid again", st, readLogs(t, rt, "third"))
	}
}

package local_test

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/runtime"
	"cairn.dev/cairn/runtime/local"
)

func TestLocal_StartReportsExitCodes(t *testing.T) {
	rt := newRuntime(t, t.TempDir(), 5*time.Second)
	cases := []struct {
		id, script string
		code       int
		reason     string
	}{
		{"zero", "echo hello", 0, ""},
		{"three", "exit 3", 3, ""},
		{"terminated", "kill -TERM $$", 143, "killed by signal SIGTERM"},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			st := mustStart(t, rt, shSpec(c.id, c.script))
			if st.Phase != runtime.PhaseRunning && st.Phase != runtime.PhaseExited {
				t.Fatalf("Start: phase %s, want Running or Exited", st.Phase)
			}
			st = mustWait(t, rt, c.id)
			if st.Phase != runtime.PhaseExited || st.ExitCode != c.code || st.Reason != c.reason {
				t.Fatalf("final state %+v, want Exited code %d reason %q", st, c.code, c.reason)
			}
			if st.Started.IsZero() || st.Ended.Before(st.Started) {
				t.Fatalf("times: started %v ended %v", st.Started, st.Ended)
			}
		})
	}
	if got := readLogs(t, rt, "zero"); got != "hello\n" {
		t.Fatalf("log of zero = %q, want hello", got)
	}
}

func TestLocal_UnitGetsExactlyItsEnvironment(t *testing.T) {
	t.Setenv("CAIRN_TEST_MUST_NOT_LEAK", "1")
	root := t.TempDir()
	rt := newRuntime(t, root, 5*time.Second)
	spec := runtime.Spec{ID: "env", Argv: []string{"env"}, Env: unitEnv("FOO=bar baz", "CAIRN_WORKSPACE=overridden"),
		WorkspaceEnv: "CAIRN_WORKSPACE"}
	mustStart(t, rt, spec)
	if st := mustWait(t, rt, "env"); st.ExitCode != 0 {
		t.Fatalf("env: %+v", st)
	}
	got := strings.Split(strings.TrimSpace(readLogs(t, rt, "env")), "\n")
	slices.Sort(got)
	ws := filepath.Join(root, "units", "env", "workspace")
	want := []string{"CAIRN_WORKSPACE=" + ws, "FOO=bar baz", "PATH=/usr/bin:/bin"}
	if !slices.Equal(got, want) {
		t.Fatalf("environment = %q, want exactly %q", got, want)
	}
}

func TestLocal_FilesAndWorkingDirAreInThePrivateWorkspace(t *testing.T) {
	root := t.TempDir()
	rt := newRuntime(t, root, 5*time.Second)
	spec := shSpec("files", `pwd; cat ../../conf/app.json; echo; cat ../../token`)
	spec.WorkspaceEnv = "CAIRN_WORKSPACE"
	spec.Files = map[string][]byte{"conf/app.json": []byte(`{"a":1}`), "token": []byte("s3cret")}
	spec.Dir = "sub/dir"
	mustStart(t, rt, spec)
	if st := mustWait(t, rt, "files"); st.ExitCode != 0 {
		t.Fatalf("files: %+v, log %q", st, readLogs(t, rt, "files"))
	}
	ws := filepath.Join(root, "units", "files", "workspace")
	want := filepath.Join(ws, "sub", "dir") + "\n" + `{"a":1}` + "\ns3cret"
	if got := readLogs(t, rt, "files"); got != want {
		t.Fatalf("log = %q, want %q", got, want)
	}
	passable := os.FileMode(0o711) // the unit's user passes through to its workspace
	if isolation().None {
		passable = 0o700
	}
	for path, perm := range map[string]os.FileMode{
		root: passable, filepath.Join(root, "units", "files"): passable, ws: 0o700,
		filepath.Join(ws, "conf"): 0o700, filepath.Join(ws, "conf", "app.json"): 0o600,
		filepath.Join(ws, "token"): 0o600, filepath.Join(ws, "sub", "dir"): 0o700,
		filepath.Join(root, "units", "files", "log"): 0o600,
	} {
		if got := mode(t, path); got != perm {
			t.Errorf("mode of %s = %o, want %o", path, got, perm)
		}
	}
	b, err := rt.ReadFile(testkit.Context(t), "files", "conf/app.json")
	if err != nil || string(b) != `{"a":1}` {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
}

func TestLocal_ReadFileStaysInsideTheWorkspace(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("private"), 0o600); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, t.TempDir(), 5*time.Second)
	mustStart(t, rt, shSpec("links", `ln -s "$OUTSIDE" abs; ln -s ../../../.. up; mkfifo fifo; echo ok > ok`,
		"OUTSIDE="+outside))
	mustWait(t, rt, "links")
	ctx := testkit.Context(t)
	if b, err := rt.ReadFile(ctx, "links", "ok"); err != nil || string(b) != "ok\n" {
		t.Fatalf("ReadFile(ok) = %q, %v", b, err)
	}
	for _, name := range []string{"abs", "up/" + outside, "fifo", "../state.json", "/etc/passwd"} {
		if b, err := rt.ReadFile(ctx, "links", name); err == nil {
			t.Errorf("ReadFile(%q) = %q, want an error", name, b)
		}
	}
	if _, err := rt.ReadFile(ctx, "links", "missing"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("ReadFile(missing): %v, want ErrNotFound", err)
	}
}

func TestLocal_MissingExecutableFailsWithReason(t *testing.T) {
	rt := newRuntime(t, t.TempDir(), 5*time.Second)
	dir := t.TempDir()
	plain, junk := filepath.Join(dir, "plain"), filepath.Join(dir, "junk")
	if err := os.WriteFile(plain, []byte("echo hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(junk, []byte{0, 1, 2, 3}, 0o755); err != nil { // executable by the unit's user
		t.Fatal(err)
	}
	cases := []struct {
		id     string
		argv   []string
		reason string
	}{
		{"in-path", []string{"cairn-no-such-command"}, `executable "cairn-no-such-command" not found in PATH`},
		{"absolute", []string{"/no/such/file"}, `executable "/no/such/file" does not exist`},
		{"not-executable", []string{plain}, `is not an executable file`},
		{"not-a-program", []string{junk}, `exec format error`},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			st, err := rt.Start(testkit.Context(t), runtime.Spec{ID: c.id, Argv: c.argv, Env: unitEnv()})
			if err != nil {
				t.Fatalf("Start: %v, want a Failed state", err)
			}
			if st.Phase != runtime.PhaseFailed || !strings.Contains(st.Reason, c.reason) {
				t.Fatalf("state %+v, want Failed with reason containing %q", st, c.reason)
			}
			if st2, _ := rt.State(testkit.Context(t), c.id); st2 != st {
				t.Fatalf("State = %+v, want %+v", st2, st)
			}
			if _, err := rt.Start(testkit.Context(t), runtime.Spec{ID: c.id, Argv: []string{"true"}}); !errors.Is(err, runtime.ErrExists) {
				t.Fatalf("second Start: %v, want ErrExists", err)
			}
		})
	}
}

func TestLocal_InvalidSpecIsRejectedBeforeAnythingExists(t *testing.T) {
	rt := newRuntime(t, t.TempDir(), 5*time.Second)
	ok := shSpec("ok", "true")
	cases := map[string]func(s *runtime.Spec){
		"empty id":      func(s *runtime.Spec) { s.ID = "" },
		"upper id":      func(s *runtime.Spec) { s.ID = "Abc" },
		"dot id":        func(s *runtime.Spec) { s.ID = ".." },
		"slash id":      func(s *runtime.Spec) { s.ID = "a/b" },
		"long id":       func(s *runtime.Spec) { s.ID = strings.Repeat("a", 201) },
		"no argv":       func(s *runtime.Spec) { s.Argv = nil },
		"bad env":       func(s *runtime.Spec) { s.Env = []string{"NOEQUALS"} },
		"absolute file": func(s *runtime.Spec) { s.Files = map[string][]byte{"/etc/x": nil} },
		"dotdot file":   func(s *runtime.Spec) { s.Files = map[string][]byte{"a/../../x": nil} },
		"absolute dir":  func(s *runtime.Spec) { s.Dir = "/tmp" },
		"dotdot dir":    func(s *runtime.Spec) { s.Dir = "../x" },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			s := ok
			mutate(&s)
			if _, err := rt.Start(testkit.Context(t), s); !errors.Is(err, runtime.ErrInvalid) {
				t.Fatalf("Start: %v, want ErrInvalid", err)
			}
		})
	}
	if units, err := rt.List(testkit.Context(t)); err != nil || len(units) != 0 {
		t.Fatalf("List = %v, %v; want nothing", units, err)
	}
}

func TestLocal_StartTwiceIsErrExists(t *testing.T) {
	root := t.TempDir()
	rt := newRuntime(t, root, 5*time.Second)
	mustStart(t, rt, shSpec("once", "echo first"))
	if _, err := rt.Start(testkit.Context(t), shSpec("once", "echo second")); !errors.Is(err, runtime.ErrExists) {
		t.Fatalf("Start while running or ended: %v, want ErrExists", err)
	}
	mustWait(t, rt, "once")
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	rt2 := newRuntime(t, root, 5*time.Second)
	if _, err := rt2.Start(testkit.Context(t), shSpec("once", "echo second")); !errors.Is(err, runtime.ErrExists) {
		t.Fatalf("Start after a restart: %v, want ErrExists", err)
	}
	if got := readLogs(t, rt2, "once"); got != "first\n" {
		t.Fatalf("log = %q: the unit ran twice", got)
	}
}

func TestLocal_KillEndsProcessTree(t *testing.T) {
	rt := newRuntime(t, t.TempDir(), 5*time.Second)
	pidFile := filepath.Join(testkit.UnitWritableDir(t), "grandchild")
	spec := shSpec("tree", `sh child.sh & wait`, "PIDFILE="+pidFile)
	spec.Files = map[string][]byte{"child.sh": []byte("sleep 300 &\necho $! > \"$PIDFILE\"\nwait\n")}
	mustStart(t, rt, spec)
	grandchild := readPids(t, pidFile, 1)[0]
	if processGone(grandchild) {
		t.Fatal("the grandchild is not running before Kill")
	}
	if err := rt.Kill(testkit.Context(t), "tree"); err != nil {
		t.Fatal(err)
	}
	st, _ := rt.State(testkit.Context(t), "tree")
	if st.Phase != runtime.PhaseExited || st.Reason != "killed by signal SIGTERM" {
		t.Fatalf("state after Kill: %+v, want Exited, killed by SIGTERM", st)
	}
	testkit.Eventually(t, 20*time.Second, "the grandchild to be gone", func() bool { return processGone(grandchild) })
	if err := rt.Kill(testkit.Context(t), "tree"); err != nil {
		t.Fatalf("Kill of an ended unit: %v, want nil", err)
	}
}

func TestLocal_KillEscalatesToSIGKILLAfterGrace(t *testing.T) {
	rt := newRuntime(t, t.TempDir(), 200*time.Millisecond)
	mustStart(t, rt, shSpec("stubborn", `trap '' TERM; echo ready; while :; do sleep 0.05; done`))
	testkit.Eventually(t, 20*time.Second, "the trap to be set", func() bool { return readLogs(t, rt, "stubborn") == "ready\n" })
	if err := rt.Kill(testkit.Context(t), "stubborn"); err != nil {
		t.Fatal(err)
	}
	st, _ := rt.State(testkit.Context(t), "stubborn")
	if st.Phase != runtime.PhaseExited || st.ExitCode != 137 || st.Reason != "killed by signal SIGKILL" {
		t.Fatalf("state %+v, want Exited 137 killed by SIGKILL", st)
	}
}

func TestLocal_LogsFollowStreamsOutputUntilExit(t *testing.T) {
	rt := newRuntime(t, t.TempDir(), 5*time.Second)
	gate := filepath.Join(t.TempDir(), "gate")
	mustStart(t, rt, shSpec("follow", gateScript(0), "GATE="+gate))
	rc, err := rt.Logs(testkit.Context(t), "follow", runtime.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	br := bufio.NewReader(rc)
	// The first line arrives while the unit is still blocked on the gate.
	if line, err := br.ReadString('\n'); err != nil || line != "started\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	if st, _ := rt.State(testkit.Context(t), "follow"); st.Phase != runtime.PhaseRunning {
		t.Fatalf("unit is %s while blocked on the gate", st.Phase)
	}
	touch(t, gate)
	rest, err := io.ReadAll(br) // ends with EOF once the unit has ended
	if err != nil || string(rest) != "done\n" {
		t.Fatalf("rest of the stream %q, %v", rest, err)
	}
	if st, _ := rt.State(testkit.Context(t), "follow"); st.Phase != runtime.PhaseExited {
		t.Fatalf("stream ended while the unit is %s", st.Phase)
	}
}

func TestLocal_LogsFollowEndsOnClose(t *testing.T) {
	rt := newRuntime(t, t.TempDir(), 5*time.Second)
	mustStart(t, rt, shSpec("quiet", `sleep 300`))
	rc, err := rt.Logs(testkit.Context(t), "quiet", runtime.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var readErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, readErr = io.ReadAll(rc)
	}()
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if readErr == nil {
		t.Fatal("a closed follow stream ended without an error")
	}
}

func TestLocal_CleanupRemovesWorkspaceButKeepsLogs(t *testing.T) {
	root := t.TempDir()
	rt := newRuntime(t, root, 5*time.Second)
	spec := shSpec("clean", `echo output; sleep 300`)
	spec.Files = map[string][]byte{"secret": []byte("x")}
	mustStart(t, rt, spec)
	testkit.Eventually(t, 20*time.Second, "output", func() bool { return readLogs(t, rt, "clean") == "output\n" })
	if err := rt.Cleanup(testkit.Context(t), "clean"); err != nil { // kills it first
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "units", "clean", "workspace")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("workspace still there: %v", err)
	}
	st, err := rt.State(testkit.Context(t), "clean")
	if err != nil || st.Phase != runtime.PhaseExited {
		t.Fatalf("state after Cleanup: %+v, %v", st, err)
	}
	if got := readLogs(t, rt, "clean"); got != "output\n" {
		t.Fatalf("log after Cleanup = %q", got)
	}
	if _, err := rt.ReadFile(testkit.Context(t), "clean", "secret"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("ReadFile after Cleanup: %v, want ErrNotFound", err)
	}
	if err := rt.Cleanup(testkit.Context(t), "clean"); err != nil {
		t.Fatalf("second Cleanup: %v", err)
	}
}

func TestLocal_RemoveForgetsUnit(t *testing.T) {
	root := t.TempDir()
	rt := newRuntime(t, root, 5*time.Second)
	mustStart(t, rt, shSpec("gone", `echo first; sleep 300`))
	if err := rt.Remove(testkit.Context(t), "gone"); err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t)
	if _, err := rt.State(ctx, "gone"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("State: %v, want ErrNotFound", err)
	}
	if _, err := rt.Logs(ctx, "gone", runtime.LogOptions{}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Logs: %v, want ErrNotFound", err)
	}
	if err := rt.Remove(ctx, "gone"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("second Remove: %v, want ErrNotFound", err)
	}
	if units, _ := rt.List(ctx); len(units) != 0 {
		t.Errorf("List = %v, want nothing", units)
	}
	if _, err := os.Stat(filepath.Join(root, "units", "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unit directory still there: %v", err)
	}
	mustStart(t, rt, shSpec("gone", `echo second`))
	mustWait(t, rt, "gone")
	if got := readLogs(t, rt, "gone"); got != "second\n" {
		t.Fatalf("log of the new unit = %q", got)
	}
}

func TestLocal_ListReportsEveryUnitInOrder(t *testing.T) {
	rt := newRuntime(t, t.TempDir(), 5*time.Second)
	mustStart(t, rt, shSpec("b", "exit 2"))
	mustStart(t, rt, shSpec("a", "exit 1"))
	mustWait(t, rt, "a")
	mustWait(t, rt, "b")
	units, err := rt.List(testkit.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range units {
		got = append(got, u.ID+"="+string(u.State.Phase)+"/"+strconv.Itoa(u.State.ExitCode))
	}
	if want := []string{"a=Exited/1", "b=Exited/2"}; !slices.Equal(got, want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
}

func TestLocal_SecondOwnerOfRootIsRefused(t *testing.T) {
	root := t.TempDir()
	testkit.UnitReachable(t)
	rt, err := local.New(local.Options{Root: root, Isolation: isolation()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := local.New(local.Options{Root: root, Isolation: isolation()}); !errors.Is(err, local.ErrLocked) {
		t.Fatalf("second New: %v, want ErrLocked", err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.List(testkit.Context(t)); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("List after Close: %v, want ErrClosed", err)
	}
	rt2, err := local.New(local.Options{Root: root, Isolation: isolation()})
	if err != nil {
		t.Fatalf("New after Close: %v", err)
	}
	_ = rt2.Close()
}

func TestLocal_ConcurrentStartsOfOneIDStartItOnce(t *testing.T) {
	rt := newRuntime(t, t.TempDir(), 5*time.Second)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = rt.Start(testkit.Context(t), shSpec("race", "echo once"))
		}()
	}
	wg.Wait()
	started := 0
	for _, err := range errs {
		switch {
		case err == nil:
			started++
		case !errors.Is(err, runtime.ErrExists):
			t.Fatalf("Start: %v, want nil or ErrExists", err)
		}
	}
	mustWait(t, rt, "race")
	if got := readLogs(t, rt, "race"); started != 1 || got != "once\n" {
		t.Fatalf("%d Starts succeeded, log %q; want exactly one", started, got)
	}
}

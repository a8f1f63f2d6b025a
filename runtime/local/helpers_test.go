package local_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/runtime"
	"cairn.dev/cairn/runtime/local"
)

// The test binary doubles as an owning process (see runOwner) when these
// variables are set; the runtime's supervisor mode needs nothing here, the
// package's init handles it.
const (
	ownerEnv       = "CAIRN_LOCAL_TEST_OWNER"
	ownerRootEnv   = "CAIRN_LOCAL_TEST_ROOT"
	ownerScriptEnv = "CAIRN_LOCAL_TEST_SCRIPT"
	ownerUnitEnv   = "CAIRN_LOCAL_TEST_UNIT_ENV"
)

func TestMain(m *testing.M) {
	if id := os.Getenv(ownerEnv); id != "" {
		os.Exit(runOwner(id))
	}
	os.Exit(m.Run())
}

// runOwner opens a Runtime on the shared root, starts one unit, says
// "ready <phase>" on stdout and then waits to be killed.
func runOwner(id string) int {
	rt, err := local.New(local.Options{Root: os.Getenv(ownerRootEnv), PollInterval: 20 * time.Millisecond, Isolation: isolation()})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	st, err := rt.Start(context.Background(), runtime.Spec{ID: id,
		Argv: []string{"sh", "-c", os.Getenv(ownerScriptEnv)},
		Env:  strings.Split(os.Getenv(ownerUnitEnv), "\n")})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("ready", st.Phase)
	time.Sleep(time.Hour) // until the test kills this process
	return 0
}

// startOwner runs the test binary as an owning process that starts unit id
// (sh -c script, with env) on root, waits until it says the unit runs, and
// returns it for the test to kill.
func startOwner(t *testing.T, root, id, script string, env []string) *exec.Cmd {
	t.Helper()
	testkit.UnitReachable(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{ownerEnv + "=" + id, ownerRootEnv + "=" + root, ownerScriptEnv + "=" + script,
		ownerUnitEnv + "=" + strings.Join(env, "\n")}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready Running\n" {
		t.Fatalf("owner process said %q (%v), want ready Running", line, err)
	}
	return cmd
}

// killOwner SIGKILLs an owning process and waits for it to be gone.
func killOwner(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// newRuntime opens a Runtime on root; at the end of the test it kills
// whatever still runs and closes it.
func newRuntime(t *testing.T, root string, grace time.Duration) *local.Runtime {
	t.Helper()
	testkit.UnitReachable(t)
	rt, err := local.New(local.Options{Root: root, KillGrace: grace, PollInterval: 20 * time.Millisecond, Isolation: isolation()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		units, _ := rt.List(ctx)
		for _, u := range units {
			_ = rt.Kill(ctx, u.ID)
		}
		_ = rt.Close()
	})
	return rt
}

// isolation is the runtime's default (a uid of its own per unit) when the
// tests run as root, as they do in CI; otherwise no user can be switched to,
// and the tests run units as their own user.
func isolation() local.Isolation {
	return local.Isolation{None: os.Geteuid() != 0}
}

// unitEnv is a unit environment with a PATH and the given extras.
func unitEnv(extra ...string) []string {
	return append([]string{"PATH=/usr/bin:/bin"}, extra...)
}

func shSpec(id, script string, env ...string) runtime.Spec {
	return runtime.Spec{ID: id, Argv: []string{"sh", "-c", script}, Env: unitEnv(env...)}
}

func mustStart(t *testing.T, rt runtime.Runtime, spec runtime.Spec) runtime.State {
	t.Helper()
	st, err := rt.Start(testkit.Context(t), spec)
	if err != nil {
		t.Fatalf("Start(%s): %v", spec.ID, err)
	}
	return st
}

func mustWait(t *testing.T, rt runtime.Runtime, id string) runtime.State {
	t.Helper()
	st, err := rt.Wait(testkit.Context(t), id)
	if err != nil {
		t.Fatalf("Wait(%s): %v", id, err)
	}
	return st
}

func readLogs(t *testing.T, rt runtime.Runtime, id string) string {
	t.Helper()
	rc, err := rt.Logs(testkit.Context(t), id, runtime.LogOptions{})
	if err != nil {
		t.Fatalf("Logs(%s): %v", id, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// processGone reports whether pid no longer runs (gone, or a zombie that
// nobody reaped yet).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	s := string(b)
	rest := s[strings.LastIndexByte(s, ')')+2:]
	return rest[0] == 'Z' || rest[0] == 'X'
}

// readPids waits for a file holding whitespace-separated pids and returns them.
func readPids(t *testing.T, path string, n int) []int {
	t.Helper()
	var pids []int
	testkit.Eventually(t, 20*time.Second, "pids in "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pids = pids[:0]
		for _, f := range strings.Fields(string(b)) {
			p, err := strconv.Atoi(f)
			if err != nil {
				return false
			}
			pids = append(pids, p)
		}
		return len(pids) == n
	})
	return pids
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// gateScript prints started, waits for the file $GATE, prints done and
// exits with code.
func gateScript(code int) string {
	return fmt.Sprintf(`echo started; while [ ! -e "$GATE" ]; do sleep 0.02; done; echo done; exit %d`, code)
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

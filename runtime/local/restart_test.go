package local_test

import (
	"errors"
	"io"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/runtime"
)

// In these tests a separate owning process (the test binary in owner mode)
// starts the unit and is SIGKILLed; a new Runtime over the same root then
// takes over, as cairn does after a crash.

func TestLocal_RunningUnitIsFoundAfterOwnerRestart(t *testing.T) {
	root, gate := t.TempDir(), filepath.Join(t.TempDir(), "gate")
	killOwner(t, startOwner(t, root, "survivor", gateScript(7), unitEnv("GATE="+gate)))

	rt := newRuntime(t, root, 5*time.Second)
	st, err := rt.State(testkit.Context(t), "survivor")
	if err != nil || st.Phase != runtime.PhaseRunning {
		t.Fatalf("after the restart: %+v, %v; want Running", st, err)
	}
	if _, err := rt.Start(testkit.Context(t), shSpec("survivor", "true")); !errors.Is(err, runtime.ErrExists) {
		t.Fatalf("Start of a recovered unit: %v, want ErrExists", err)
	}
	rc, err := rt.Logs(testkit.Context(t), "survivor", runtime.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	touch(t, gate)
	st = mustWait(t, rt, "survivor")
	if st.Phase != runtime.PhaseExited || st.ExitCode != 7 {
		t.Fatalf("final state %+v, want Exited 7", st)
	}
	if b, err := io.ReadAll(rc); err != nil || string(b) != "started\ndone\n" {
		t.Fatalf("followed log %q, %v", b, err)
	}
}

func TestLocal_RecoveredUnitCanBeKilled(t *testing.T) {
	root, pidFile := t.TempDir(), filepath.Join(testkit.UnitWritableDir(t), "pids")
	killOwner(t, startOwner(t, root, "victim", `sleep 300 & echo $! > "$PIDFILE"; wait`, unitEnv("PIDFILE="+pidFile)))
	child := readPids(t, pidFile, 1)[0]

	rt := newRuntime(t, root, 5*time.Second)
	if err := rt.Kill(testkit.Context(t), "victim"); err != nil {
		t.Fatal(err)
	}
	st, _ := rt.State(testkit.Context(t), "victim")
	if st.Phase != runtime.PhaseExited || st.Reason != "killed by signal SIGTERM" {
		t.Fatalf("state %+v, want Exited, killed by SIGTERM", st)
	}
	testkit.Eventually(t, 20*time.Second, "the unit's child to be gone", func() bool { return processGone(child) })
}

func TestLocal_UnitEndedWhileOwnerDownReportsRealExitCode(t *testing.T) {
	root, tmp := t.TempDir(), testkit.UnitWritableDir(t)
	gate, pidFile := filepath.Join(tmp, "gate"), filepath.Join(tmp, "pids")
	owner := startOwner(t, root, "ended", `echo $PPID > "$PIDFILE"; `+gateScript(5),
		unitEnv("GATE="+gate, "PIDFILE="+pidFile))
	supervisor := readPids(t, pidFile, 1)[0]
	killOwner(t, owner)
	touch(t, gate)
	// The supervisor records the status, then ends.
	testkit.Eventually(t, 20*time.Second, "the unit's supervisor to end", func() bool { return processGone(supervisor) })

	rt := newRuntime(t, root, 5*time.Second)
	st, err := rt.State(testkit.Context(t), "ended")
	if err != nil || st.Phase != runtime.PhaseExited || st.ExitCode != 5 {
		t.Fatalf("after the restart: %+v, %v; want Exited 5", st, err)
	}
	if got := readLogs(t, rt, "ended"); got != "started\ndone\n" {
		t.Fatalf("log %q", got)
	}
}

func TestLocal_UnitKilledWhileOwnerDownIsNotRunning(t *testing.T) {
	cases := []struct {
		name           string
		killSupervisor bool
		want           runtime.State
	}{
		// The supervisor survives and records the signal.
		{"command killed", false, runtime.State{Phase: runtime.PhaseExited, ExitCode: 137, Reason: "killed by signal SIGKILL"}},
		// Nobody is left to record anything.
		{"command and supervisor killed", true, runtime.State{Phase: runtime.PhaseLost, ExitCode: -1,
			Reason: "the unit ended without a recorded exit status (its supervisor was killed)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, pidFile := t.TempDir(), filepath.Join(testkit.UnitWritableDir(t), "pids")
			owner := startOwner(t, root, "doomed", `echo $$ $PPID > "$PIDFILE"; sleep 300`, unitEnv("PIDFILE="+pidFile))
			pids := readPids(t, pidFile, 2)
			command, supervisor := pids[0], pids[1]
			killOwner(t, owner)
			if c.killSupervisor {
				if err := syscall.Kill(supervisor, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				testkit.Eventually(t, 20*time.Second, "the supervisor to be gone", func() bool { return processGone(supervisor) })
			}
			if err := syscall.Kill(-command, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, 20*time.Second, "the command to be gone", func() bool { return processGone(command) })
			if !c.killSupervisor {
				testkit.Eventually(t, 20*time.Second, "the supervisor to end", func() bool { return processGone(supervisor) })
			}

			rt := newRuntime(t, root, 5*time.Second)
			st := mustWait(t, rt, "doomed")
			if st.Phase != c.want.Phase || st.ExitCode != c.want.ExitCode || st.Reason != c.want.Reason {
				t.Fatalf("state %+v, want %+v", st, c.want)
			}
		})
	}
}

func TestLocal_CloseLeavesUnitsRunning(t *testing.T) {
	root, gate := t.TempDir(), filepath.Join(t.TempDir(), "gate")
	rt := newRuntime(t, root, 5*time.Second)
	mustStart(t, rt, shSpec("lasting", gateScript(3), "GATE="+gate))
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	rt2 := newRuntime(t, root, 5*time.Second)
	if st, err := rt2.State(testkit.Context(t), "lasting"); err != nil || st.Phase != runtime.PhaseRunning {
		t.Fatalf("after Close and New: %+v, %v; want Running", st, err)
	}
	touch(t, gate)
	if st := mustWait(t, rt2, "lasting"); st.Phase != runtime.PhaseExited || st.ExitCode != 3 {
		t.Fatalf("final state %+v, want Exited 3", st)
	}
}

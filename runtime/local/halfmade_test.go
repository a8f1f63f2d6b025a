package local_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/runtime"
	"cairn.dev/cairn/runtime/local"
)

// An owner killed while it reserved a unit (before the unit's first record
// was in place) leaves a half-made unit directory, and perhaps a uid claim
// naming it. Nothing of it ever ran: the next Runtime over the root removes
// it and drops the claim, and the unit can be started, instead of being
// found Failed ("its state could not be read").
func TestLocal_HalfMadeUnitIsRemovedOnRecoveryAndStartsAgain(t *testing.T) {
	testkit.UnitReachable(t)
	for _, tc := range []struct {
		name  string
		mode  os.FileMode
		claim bool   // a uid claim names the directory
		tmp   string // content of state.json.tmp, "" for none
	}{
		{"killed after mkdir", 0o700, false, ""},
		{"killed after chmod", 0o711, false, ""},
		{"killed after the uid claim", 0o711, true, ""},
		{"killed while writing the first record", 0o711, true, `{"id":"half","us`},
		{"killed before renaming the first record", 0o711, true, `{"id":"half","state":{"phase":"Pending"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testkit.UnitReachable(t)
			root, claims := t.TempDir(), t.TempDir()
			if err := os.Chmod(claims, 0o700); err != nil {
				t.Fatal(err)
			}
			iso := isolation()
			if !iso.None {
				iso.ClaimDir = claims
			}
			dir := filepath.Join(root, "units", "half")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tc.mode); err != nil {
				t.Fatal(err)
			}
			claim := filepath.Join(claims, strconv.FormatUint(uint64(local.DefaultUIDs.First), 10))
			if tc.claim {
				if err := os.WriteFile(claim, []byte(dir+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.tmp != "" {
				if err := os.WriteFile(filepath.Join(dir, "state.json.tmp"), []byte(tc.tmp), 0o600); err != nil {
					t.Fatal(err)
				}
			}

			rt, err := local.New(local.Options{Root: root, KillGrace: 5 * time.Second, PollInterval: 20 * time.Millisecond, Isolation: iso})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			if st, err := rt.State(testkit.Context(t), "half"); !errors.Is(err, runtime.ErrNotFound) {
				t.Fatalf("after recovery: %+v, %v; want no such unit", st, err)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the half-made directory is still there: %v", err)
			}
			if _, err := os.Stat(claim); tc.claim && !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the claim of the half-made unit is still there: %v", err)
			}
			mustStart(t, rt, shSpec("half", "echo ran"))
			if st := mustWait(t, rt, "half"); st.Phase != runtime.PhaseExited || st.ExitCode != 0 {
				t.Fatalf("final state %+v, want Exited 0", st)
			}
			if got := readLogs(t, rt, "half"); got != "ran\n" {
				t.Fatalf("log %q", got)
			}
		})
	}
}

// A unit directory whose record cannot be read but which holds more than a
// reservation leaves (here: a workspace) is not taken for half-made: it
// stays, Failed with the reason, so that nothing that may have run is
// started twice.
func TestLocal_UnreadableUnitWithAWorkspaceStaysFailed(t *testing.T) {
	testkit.UnitReachable(t)
	root := t.TempDir()
	dir := filepath.Join(root, "units", "used")
	if err := os.MkdirAll(filepath.Join(dir, "workspace"), 0o700); err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t, root, 5*time.Second)
	st, err := rt.State(testkit.Context(t), "used")
	if err != nil || st.Phase != runtime.PhaseFailed {
		t.Fatalf("state %+v, %v; want Failed", st, err)
	}
	if _, err := rt.Start(testkit.Context(t), shSpec("used", "true")); !errors.Is(err, runtime.ErrExists) {
		t.Fatalf("Start: %v, want ErrExists", err)
	}
}

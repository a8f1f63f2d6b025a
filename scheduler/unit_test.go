package scheduler_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/scheduler"
)

func TestUnitSpec_GivesTheWorkerItsEnvironmentAndFiles(t *testing.T) {
	ev := &api.Event{ObjectMeta: api.ObjectMeta{Name: "e1", Namespace: "team", UID: "0f8fad5b-d9cb-469f-a165-70867728950e"}}
	secrets := map[string][]byte{"password": []byte("pw")}
	for _, tc := range []struct {
		name    string
		job     string
		spec    api.WorkerSpec
		env     []string // entries that must be present
		noEnv   string   // a variable that must be absent
		id      string
		failure string
	}{
		{name: "worker", spec: api.WorkerSpec{Command: []string{"sh", "-c", "true"}, Env: map[string]string{"A": "1"}, Workspace: "src"},
			env:   []string{"A=1", "CAIRN_SERVER=http://api", "CAIRN_TOKEN=tok", "CAIRN_NAMESPACE=team", "CAIRN_EVENT=e1"},
			noEnv: "CAIRN_JOB", id: api.WorkerUnitID(ev.UID)},
		{name: "job", job: "build", spec: api.WorkerSpec{Command: []string{"true"}},
			env: []string{"CAIRN_JOB=build", "CAIRN_TOKEN=tok"}, id: api.JobUnitID(ev.UID, "build")},
		{name: "the spec's PATH wins", spec: api.WorkerSpec{Command: []string{"true"}, Env: map[string]string{"PATH": "/nowhere"}},
			failure: `command "true" not found in PATH`},
		{name: "missing command", spec: api.WorkerSpec{Command: []string{"no-such-command-cairn"}}, failure: "not found in PATH"},
		{name: "missing path", spec: api.WorkerSpec{Command: []string{"/no/such/file"}}, failure: "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := scheduler.UnitSpec(scheduler.UnitInput{Event: ev, Job: tc.job, Spec: tc.spec, Secrets: secrets, Token: "tok",
				Server: "http://api", Path: "/usr/bin:/bin"})
			if tc.failure != "" {
				var se *scheduler.StartError
				if !errors.As(err, &se) || !strings.Contains(se.Reason, tc.failure) {
					t.Fatalf("UnitSpec = %v, want a StartError saying %q", err, tc.failure)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range tc.env {
				if !slices.Contains(s.Env, e) {
					t.Errorf("env %v lacks %s", s.Env, e)
				}
			}
			if tc.noEnv != "" && slices.ContainsFunc(s.Env, func(e string) bool { return strings.HasPrefix(e, tc.noEnv+"=") }) {
				t.Errorf("env has %s", tc.noEnv)
			}
			if s.ID != tc.id || s.WorkspaceEnv != "CAIRN_WORKSPACE" || s.Dir != tc.spec.Workspace {
				t.Errorf("id %q workspace env %q dir %q", s.ID, s.WorkspaceEnv, s.Dir)
			}
			if string(s.Files[".cairn/secrets/password"]) != "pw" || s.Files[".cairn/event.json"] == nil {
				t.Errorf("files %v, want the event and the secret", slices.Sorted(maps.Keys(s.Files)))
			}
			for name, b := range s.Files {
				if strings.Contains(string(b), "tok") {
					t.Errorf("file %s holds the token: it is in CAIRN_TOKEN only", name)
				}
			}
		})
	}
}

// A unit runs as a user of its own and cannot read the server's files: it
// gets a copy of the API's CA in its workspace, and CAIRN_CA_FILE names the
// copy.
func TestUnitSpec_CopiesTheCAIntoTheUnitsFiles(t *testing.T) {
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ev := &api.Event{ObjectMeta: api.ObjectMeta{Name: "e1", Namespace: "team", UID: "0f8fad5b-d9cb-469f-a165-70867728950e"}}
	s, err := scheduler.UnitSpec(scheduler.UnitInput{Event: ev, Spec: api.WorkerSpec{Command: []string{"true"}},
		Token: "tok", Server: "https://api", CAFile: ca, Path: "/usr/bin:/bin"})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(s.Files[".cairn/ca.crt"]); got != "-----BEGIN CERTIFICATE-----\n" {
		t.Fatalf("the unit's CA file holds %q", got)
	}
	if slices.ContainsFunc(s.Env, func(e string) bool { return strings.Contains(e, ca) }) {
		t.Fatalf("env %v names the server's CA file", s.Env)
	}
	if !strings.Contains(s.Argv[2], `CAIRN_CA_FILE="$CAIRN_WORKSPACE/.cairn/ca.crt"`) {
		t.Fatalf("the wrapper %q does not point CAIRN_CA_FILE at the copy", s.Argv[2])
	}
	if _, err := scheduler.UnitSpec(scheduler.UnitInput{Event: ev, Spec: api.WorkerSpec{Command: []string{"true"}},
		CAFile: filepath.Join(t.TempDir(), "missing"), Path: "/usr/bin:/bin"}); err == nil {
		t.Fatal("a CA file that cannot be read: no error")
	}
}

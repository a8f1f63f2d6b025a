package event_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
)

// TestServer_KilledWhileWorkersRunThenRestarted kills `cairn server` with
// SIGKILL while workers run and starts it again on the same data dir:
// every event ends SUCCEEDED and no worker runs twice.
func TestServer_KilledWhileWorkersRunThenRestarted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the cairn binary")
	}
	bin := clitest.BuildCairn(t)
	home, data := t.TempDir(), filepath.Join(t.TempDir(), "data")
	serve := func() *clitest.Proc {
		cmd := exec.Command(bin, append([]string{"server", "--listen", "127.0.0.1:0", "--data-dir", data,
			"--event-max-workers", "2", "--event-grace-period", "1s"}, clitest.RuntimeFlags(t, filepath.Join(filepath.Dir(data), "runtime"))...)...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		return clitest.Start(t, cmd)
	}
	srv := serve()
	token, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	connect := func(url string) client.Interface {
		c, err := client.NewHTTP(client.Config{Server: url, Token: strings.TrimSpace(string(token)), CAFile: filepath.Join(data, daemon.CAFileName)})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := connect(srv.URL)
	ctx := context.Background()
	// Each worker runs as a uid of its own: the file they all append to is
	// open to all.
	runs := filepath.Join(testkit.UnitWritableDir(t), "runs")
	if err := os.WriteFile(runs, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(runs, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*api.Project](c).Create(ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: "once", Namespace: "default"},
		Spec: api.ProjectSpec{WorkerTemplate: api.WorkerSpec{Command: []string{"sh", "-c", `echo "$CAIRN_EVENT" >> ` + runs + `; sleep 3`}}}}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for range 4 {
		obj, err := c.Create(ctx, &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindEvent},
			ObjectMeta: api.ObjectMeta{Namespace: "default"}, Fields: eventFields(t)})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, obj.Name)
	}
	phase := func(c client.Interface, name string) api.EventPhase {
		ev, err := client.For[*api.Event](c).Get(ctx, "default", name)
		if err != nil {
			return ""
		}
		return ev.Status.Worker.Phase
	}
	testkit.Eventually(t, 60*time.Second, "two workers running", func() bool {
		n := 0
		for _, name := range names {
			if phase(c, name) == api.PhaseRunning {
				n++
			}
		}
		return n == 2
	})
	if err := srv.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-srv.Done()
	c = connect(serve().URL)
	for _, name := range names {
		testkit.Eventually(t, 90*time.Second, "event "+name+" SUCCEEDED after the restart", func() bool {
			return phase(c, name) == api.PhaseSucceeded
		})
	}
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l] {
			t.Fatalf("the worker of %s ran twice: %v", l, lines)
		}
		seen[l] = true
	}
	if len(lines) != len(names) {
		t.Fatalf("workers ran %d times for %d events", len(lines), len(names))
	}
}

func eventFields(t *testing.T) map[string]json.RawMessage {
	spec, err := json.Marshal(api.EventSpec{Project: "once", Source: "test", Type: "run"})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]json.RawMessage{"spec": spec}
}

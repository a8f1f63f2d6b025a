package container_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
)

// A leader whose runtime is not the one that started a run (another
// host's) finds the run recorded in the item's status and never starts
// it again: the item fails, naming the lost run.
func TestContainer_RunRecordedByAnotherRuntimeIsLostNotStartedAgain(t *testing.T) {
	rt := openRuntime(t, filepath.Join(t.TempDir(), "runtime-a"))
	e := deploytest.Start(t, deploytest.Options{})
	stop := e.Run(deploytest.Options{Runtime: rt}, ctrls(deploytest.NoTimeouts())...)
	dir := testkit.UnitWritableDir(t)
	runs, release := filepath.Join(dir, "runs"), filepath.Join(dir, "release")
	script := `echo run >> "$RUNS"; while [ ! -f "$RELEASE" ]; do sleep 0.05; done`
	e.Execution("app", []api.DeployItemTemplate{item("db", script, "", map[string]string{"RUNS": runs, "RELEASE": release})})
	testkit.Eventually(t, deploytest.Wait, "the command running", func() bool { _, err := os.Stat(runs); return err == nil })
	running := e.WaitItem("app-db", "its run recorded", func(d api.DeployItem) bool {
		return strings.Contains(string(d.Status.ProviderStatus), `"run":"di-`)
	})

	// Another leader, with a runtime of its own, takes over.
	stop()
	rt2 := openRuntime(t, filepath.Join(t.TempDir(), "runtime-b"))
	e.Run(deploytest.Options{Runtime: rt2}, ctrls(deploytest.NoTimeouts())...)
	d := e.WaitItem("app-db", "failed as lost", func(d api.DeployItem) bool { return d.Status.Phase == api.DeployFailed })
	if d.Status.LastError == nil || d.Status.LastError.Reason != api.ReasonLost ||
		!strings.Contains(d.Status.LastError.Message, "was recorded as started") ||
		!strings.Contains(string(running.Status.ProviderStatus), runOf(d.Status.LastError.Message)) {
		t.Fatalf("lastError %+v, providerStatus %s: want Lost naming the recorded run", d.Status.LastError, running.Status.ProviderStatus)
	}
	units, err := rt2.List(context.Background())
	if err != nil || len(units) != 0 {
		t.Fatalf("the new leader's runtime has units %v (%v): it started the run again", units, err)
	}
	b, _ := os.ReadFile(runs)
	if n := strings.Count(string(b), "run"); n != 1 {
		t.Fatalf("the command ran %d times for one run", n)
	}
	_ = os.WriteFile(release, nil, 0o600)
}

// runOf is the run id a lost run's message names ("run ID was ...").
func runOf(msg string) string {
	_, rest, _ := strings.Cut(msg, "run ")
	id, _, _ := strings.Cut(rest, " ")
	return id
}

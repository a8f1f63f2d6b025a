package container_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer/container"
	"cairn.dev/cairn/deployitem"
	"cairn.dev/cairn/execution"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/runtime/local"
)

func openRuntime(t *testing.T, root string) *local.Runtime {
	t.Helper()
	testkit.UnitReachable(t)
	rt, err := local.New(local.Options{Root: root, KillGrace: 2 * time.Second, PollInterval: 20 * time.Millisecond,
		Isolation: local.Isolation{None: os.Geteuid() != 0}}) // units get uids of their own when the tests run as root
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	return rt
}

func ctrls(timeouts deployitem.Timeouts) []manager.Controller {
	return []manager.Controller{
		{Name: "execution", Setup: func(tm *manager.Term) error { return execution.Setup(tm, execution.Options{}) }},
		{Name: "deployer-container", Setup: container.Setup},
		{Name: "deployitem-timeout", Setup: func(tm *manager.Term) error {
			return deployitem.Setup(tm, deployitem.Options{Timeouts: timeouts})
		}},
	}
}

func start(t *testing.T) *deploytest.Env {
	rt := openRuntime(t, filepath.Join(t.TempDir(), "runtime"))
	return deploytest.Start(t, deploytest.Options{Runtime: rt}, ctrls(deploytest.NoTimeouts())...)
}

// item is a container deploy item template running script with env.
func item(name, script, deleteScript string, env map[string]string, dependsOn ...string) api.DeployItemTemplate {
	cfg := map[string]any{"command": []string{"sh", "-c", script}, "env": env, "imports": map[string]any{"db": "pg"}}
	if deleteScript != "" {
		cfg["deleteCommand"] = []string{"sh", "-c", deleteScript}
	}
	raw, _ := json.Marshal(cfg)
	return api.DeployItemTemplate{Name: name, Type: container.Type, Config: raw, DependsOn: dependsOn}
}

func TestContainer_SucceedsWithTheExportsItsCommandWrites(t *testing.T) {
	e := start(t)
	e.Execution("app", []api.DeployItemTemplate{
		item("db", `printf '{"host":"db.local","imports":%s}' "$(cat "$CAIRN_IMPORTS")" > "$CAIRN_EXPORTS"`, "", nil),
		item("web", `test -f "$CAIRN_IMPORTS" && echo '{"url":"http://web"}' > "$CAIRN_EXPORTS"`, "", nil, "db"),
	})
	x := e.WaitExecution("app", api.DeploySucceeded)
	got := e.Data(x.Status.ExportRef)
	db := got["db"].(map[string]any)
	imports := db["imports"].(map[string]any)
	if db["host"] != "db.local" || imports["name"] != "db" || imports["imports"].(map[string]any)["db"] != "pg" ||
		got["web"].(map[string]any)["url"] != "http://web" {
		t.Fatalf("exports %v: want the command's exports and the imports file it read", got)
	}
}

func TestContainer_NonZeroExitFailsWithTheOutputsTail(t *testing.T) {
	e := start(t)
	e.Execution("app", []api.DeployItemTemplate{item("db", `echo starting; echo "disk full on /var" >&2; exit 3`, "", nil)})
	d := e.WaitItem("app-db", "failed", func(d api.DeployItem) bool { return d.Status.Phase == api.DeployFailed })
	if d.Status.LastError == nil || d.Status.LastError.Reason != api.ReasonCommandFailed ||
		!strings.Contains(d.Status.LastError.Message, "exited with code 3") || !strings.Contains(d.Status.LastError.Message, "disk full on /var") {
		t.Fatalf("lastError %+v: want the exit code and the output's tail", d.Status.LastError)
	}
	x := e.WaitExecution("app", api.DeployFailed)
	if !strings.Contains(x.Status.LastError.Message, "db failed: CommandFailed") {
		t.Fatalf("execution lastError %q does not name db", x.Status.LastError.Message)
	}
}

func TestContainer_DeletionRunsTheDeleteCommandOnce(t *testing.T) {
	e := start(t)
	mark := filepath.Join(testkit.UnitWritableDir(t), "uninstalled")
	e.Execution("app", []api.DeployItemTemplate{item("db", `true`, `echo "$CAIRN_DEPLOYITEM" >> "$MARK"`, map[string]string{"MARK": mark})})
	e.WaitExecution("app", api.DeploySucceeded)
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the delete command ran before the deletion")
	}
	e.Delete(api.KindExecution, "app")
	e.WaitGone(api.KindExecution, "app")
	b, err := os.ReadFile(mark)
	if err != nil || strings.TrimSpace(string(b)) != "app-db" {
		t.Fatalf("the delete command did not run once for app-db: %q %v", b, err)
	}
}

func TestContainer_FailedDeleteCommandFailsTheExecutionUntilDeletedWithoutUninstall(t *testing.T) {
	e := start(t)
	e.Execution("app", []api.DeployItemTemplate{item("db", `true`, `echo "target unreachable"; exit 1`, nil)})
	e.WaitExecution("app", api.DeploySucceeded)
	e.Delete(api.KindExecution, "app")
	testkit.EventuallyNil(t, deploytest.Wait, "execution failed by the delete command", func() error {
		x := e.GetExecution("app")
		if x.Status.Phase != api.DeployFailed || x.Status.LastError == nil || !strings.Contains(x.Status.LastError.Message, "target unreachable") {
			return fmt.Errorf("status %+v", x.Status)
		}
		return nil
	})
	e.WaitExplain(api.KindExecution, "app", "deletion of deploy item db failed")
	e.Patch(api.KindDeployItem, "app-db", `{"metadata":{"annotations":{"cairn.dev/delete-without-uninstall":"true"}}}`)
	e.WaitGone(api.KindExecution, "app")
	e.WaitExplain(api.KindDeployItem, "app-db", "cairn.dev/delete-without-uninstall is set: no uninstall")
}

// gone reports whether process pid has ended (a zombie counts as ended).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] == "Z"
}

// backgroundChild is a command that starts a child in the background,
// writes its pid to $PIDFILE and waits.
const backgroundChild = `sleep 300 & echo $! > "$PIDFILE.tmp"; mv "$PIDFILE.tmp" "$PIDFILE"; wait`

func readPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	testkit.Eventually(t, deploytest.Wait, "the command's child pid", func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

func TestContainer_AbortKillsTheProcessGroup(t *testing.T) {
	e := start(t)
	pidfile := filepath.Join(testkit.UnitWritableDir(t), "pid")
	e.Execution("app", []api.DeployItemTemplate{item("db", backgroundChild, "", map[string]string{"PIDFILE": pidfile})})
	pid := readPid(t, pidfile)
	e.Patch(api.KindDeployItem, "app-db", `{"metadata":{"annotations":{"cairn.dev/operation":"abort"}}}`)
	e.WaitItem("app-db", "aborted, without the abort annotation", func(d api.DeployItem) bool {
		_, asked := d.Annotations[api.AnnotationOperation]
		return d.Status.Phase == api.DeployFailed && d.Status.LastError != nil && d.Status.LastError.Reason == "Aborted" && !asked
	})
	testkit.Eventually(t, deploytest.Wait, "the command's background child killed", func() bool { return gone(pid) })
	e.WaitExecution("app", api.DeployFailed)
}

func TestContainer_ProgressingTimeoutKillsTheProcessGroup(t *testing.T) {
	rt := openRuntime(t, filepath.Join(t.TempDir(), "runtime"))
	e := deploytest.Start(t, deploytest.Options{Runtime: rt}, ctrls(deployitem.Timeouts{Progressing: 2 * time.Second})...)
	pidfile := filepath.Join(testkit.UnitWritableDir(t), "pid")
	e.Execution("app", []api.DeployItemTemplate{item("db", backgroundChild, "", map[string]string{"PIDFILE": pidfile})})
	pid := readPid(t, pidfile)
	e.WaitItem("app-db", "aborted by the progressing timeout", func(d api.DeployItem) bool {
		return d.Status.Phase == api.DeployFailed && d.Status.LastError != nil && d.Status.LastError.Reason == api.ReasonProgressingTimeout
	})
	testkit.Eventually(t, deploytest.Wait, "the command's background child killed", func() bool { return gone(pid) })
}

func TestContainer_RestartNeverRunsAnItemTwiceForOneGeneration(t *testing.T) {
	root := filepath.Join(t.TempDir(), "runtime")
	rt := openRuntime(t, root)
	e := deploytest.Start(t, deploytest.Options{})
	stop := e.Run(deploytest.Options{Runtime: rt}, ctrls(deploytest.NoTimeouts())...)
	dir := testkit.UnitWritableDir(t)
	runs, release := filepath.Join(dir, "runs"), filepath.Join(dir, "release")
	script := `echo run >> "$RUNS"; while [ ! -f "$RELEASE" ]; do sleep 0.05; done; echo '{"ok":true}' > "$CAIRN_EXPORTS"`
	e.Execution("app", []api.DeployItemTemplate{item("db", script, "", map[string]string{"RUNS": runs, "RELEASE": release})})
	testkit.Eventually(t, deploytest.Wait, "the command running", func() bool { _, err := os.Stat(runs); return err == nil })

	// The controllers and the runtime go away while the command runs, and
	// come back: the unit is found again, not started again.
	stop()
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	rt2 := openRuntime(t, root)
	e.Run(deploytest.Options{Runtime: rt2}, ctrls(deploytest.NoTimeouts())...)
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	x := e.WaitExecution("app", api.DeploySucceeded)
	if got := e.Data(x.Status.ExportRef); got["db"].(map[string]any)["ok"] != true {
		t.Fatalf("exports %v", got)
	}
	b, _ := os.ReadFile(runs)
	if n := strings.Count(string(b), "run"); n != 1 {
		t.Fatalf("the command ran %d times for one generation", n)
	}
}

func TestContainer_FailedUninstallIsRetriedByTheReconcileOperation(t *testing.T) {
	e := start(t)
	ok := filepath.Join(t.TempDir(), "reachable")
	e.Execution("app", []api.DeployItemTemplate{item("db", `true`, `test -f "$OK" || { echo "target unreachable"; exit 1; }`,
		map[string]string{"OK": ok})})
	e.WaitExecution("app", api.DeploySucceeded)
	e.Delete(api.KindExecution, "app")
	e.WaitItem("app-db", "uninstall failed", func(d api.DeployItem) bool {
		return d.Status.Phase == api.DeployFailed && d.Status.LastError != nil && strings.Contains(d.Status.LastError.Message, "target unreachable")
	})
	if err := os.WriteFile(ok, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.Patch(api.KindDeployItem, "app-db", `{"metadata":{"annotations":{"cairn.dev/operation":"reconcile"}}}`)
	e.WaitGone(api.KindExecution, "app")
	e.WaitGone(api.KindDeployItem, "app-db")
	e.WaitExplain(api.KindDeployItem, "app-db", "retrying the uninstall")
}

func TestContainer_TraceSaysWhatADeletionWaitsFor(t *testing.T) {
	e := start(t)
	release := filepath.Join(t.TempDir(), "release")
	e.Execution("app", []api.DeployItemTemplate{
		item("db", `true`, `while [ ! -f "$RELEASE" ]; do sleep 0.05; done`, map[string]string{"RELEASE": release}),
		item("web", `true`, `while [ ! -f "$RELEASE" ]; do sleep 0.05; done`, map[string]string{"RELEASE": release}, "db"),
	})
	e.WaitExecution("app", api.DeploySucceeded)
	e.Delete(api.KindExecution, "app")
	e.WaitExplain(api.KindExecution, "app", "deploy item db: waits until web, which depend on it, are gone")
	e.WaitExplain(api.KindExecution, "app", "deploy item web: deleting, waits for its deployer to uninstall it")
	e.WaitExplain(api.KindDeployItem, "app-web", "Deleting: waiting for the container deployer's uninstall to end")
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.WaitGone(api.KindExecution, "app")
}

// An uninstall is bounded by the item's progressing timeout: a delete
// command that hangs is aborted (its process group killed), the item fails
// naming delete-without-uninstall as the way out, and that way out lets
// the deletion end.
func TestContainer_AHungUninstallIsAbortedByTheProgressingTimeout(t *testing.T) {
	rt := openRuntime(t, filepath.Join(t.TempDir(), "runtime"))
	e := deploytest.Start(t, deploytest.Options{Runtime: rt}, ctrls(deployitem.Timeouts{Progressing: 2 * time.Second})...)
	pidfile := filepath.Join(testkit.UnitWritableDir(t), "pid")
	e.Execution("app", []api.DeployItemTemplate{item("db", `true`, backgroundChild, map[string]string{"PIDFILE": pidfile})})
	e.WaitExecution("app", api.DeploySucceeded)
	e.Delete(api.KindExecution, "app")
	pid := readPid(t, pidfile)
	d := e.WaitItem("app-db", "the uninstall aborted by the progressing timeout", func(d api.DeployItem) bool {
		_, asked := d.Annotations[api.AnnotationOperation]
		return d.Status.Phase == api.DeployFailed && d.Status.LastError != nil && !asked &&
			strings.Contains(d.Status.LastError.Message, "did not finish within the progressing timeout")
	})
	if !strings.Contains(d.Status.LastError.Message, api.AnnotationDeleteWithoutUninstall) {
		t.Fatalf("lastError %+v: want it to name %s", d.Status.LastError, api.AnnotationDeleteWithoutUninstall)
	}
	testkit.Eventually(t, deploytest.Wait, "the delete command's background child killed", func() bool { return gone(pid) })
	e.Patch(api.KindDeployItem, "app-db", `{"metadata":{"annotations":{"cairn.dev/delete-without-uninstall":"true"}}}`)
	e.WaitGone(api.KindExecution, "app")
}

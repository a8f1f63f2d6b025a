package scheduler_test

import (
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
)

func TestWorker_SucceedsWithItsEnvironmentAndIsCleanedUpAfterTheGracePeriod(t *testing.T) {
	h := startHarness(t, controllers.Config{EventGracePeriod: 2 * time.Second})
	if _, err := h.c.Create(t.Context(), testkit.Secret("default", "db", map[string]string{"password": "pw"})); err != nil {
		t.Fatal(err)
	}
	spec := script(`set -e
echo "hello from $CAIRN_EVENT in $CAIRN_NAMESPACE"
test -n "$CAIRN_SERVER" && test -n "$CAIRN_TOKEN" && grep -q "BEGIN CERTIFICATE" "$CAIRN_CA_FILE"
test "$(cat "$CAIRN_SECRETS_DIR/password")" = pw
grep -q '"project": "env"' "$CAIRN_EVENT_FILE"
test "$(stat -c %a "$CAIRN_EVENT_FILE")" = 600
test "$PWD" = "$CAIRN_WORKSPACE"
test -z "$CAIRN_JOB"`)
	spec.Secrets = []string{"db"}
	h.project("env", spec)
	name := h.create("env")
	ev := h.waitPhase(name, api.PhaseSucceeded)
	if ev.Status.Worker.ExitCode == nil || *ev.Status.Worker.ExitCode != 0 || ev.Status.Worker.Started.IsZero() || ev.Status.Worker.Ended.IsZero() {
		t.Fatalf("worker status %+v, want exit 0 with start and end", ev.Status.Worker)
	}
	if logs := h.logs(name, ""); !strings.Contains(logs, "hello from "+name+" in default") {
		t.Fatalf("logs = %q", logs)
	}
	id := api.WorkerUnitID(ev.UID)
	testkit.Eventually(t, wait, "the workspace cleaned up after the grace period", func() bool {
		return !exists(h.unitDir(id) + "/workspace")
	})
	if logs := h.logs(name, ""); !strings.Contains(logs, "hello from") {
		t.Fatalf("logs after cleanup = %q, want them kept", logs)
	}
	families, err := h.d.Metrics().Gather()
	if err != nil {
		t.Fatal(err)
	}
	claims := 0.0
	for _, f := range families {
		if f.GetName() == "cairn_events_claims_total" {
			for _, m := range f.GetMetric() {
				if m.GetLabel()[0].GetValue() == "worker" {
					claims = m.GetCounter().GetValue()
				}
			}
		}
	}
	if claims != 1 {
		t.Fatalf("cairn_events_claims_total{what=worker} = %v, want 1", claims)
	}
}

func TestWorker_ExitCodeFailsIt(t *testing.T) {
	h := startHarness(t, controllers.Config{})
	h.project("fail", script("echo oops >&2; exit 3"))
	ev := h.waitPhase(h.create("fail"), api.PhaseFailed)
	if ev.Status.Worker.ExitCode == nil || *ev.Status.Worker.ExitCode != 3 || !strings.Contains(ev.Status.Worker.Reason, "code 3") {
		t.Fatalf("worker = %+v, want exit code 3 and a reason", ev.Status.Worker)
	}
}

func TestWorker_MissingCommandEndsWithAReason(t *testing.T) {
	h := startHarness(t, controllers.Config{})
	h.project("missing", api.ProjectSpec{WorkerTemplate: api.WorkerSpec{Command: []string{"no-such-command-cairn"}}})
	h.project("missing-path", api.ProjectSpec{WorkerTemplate: api.WorkerSpec{Command: []string{"/no/such/file"}}})
	for _, p := range []string{"missing", "missing-path"} {
		ev := h.waitPhase(h.create(p), api.PhaseFailed)
		if !strings.Contains(ev.Status.Worker.Reason, "failed to start") || !strings.Contains(ev.Status.Worker.Reason, "no") {
			t.Fatalf("%s: reason %q, want one saying it failed to start", p, ev.Status.Worker.Reason)
		}
	}
}

func TestWorker_TimeoutKillsItsProcessGroupAndCleansUpAtOnce(t *testing.T) {
	h := startHarness(t, controllers.Config{EventGracePeriod: time.Hour})
	pids := testkit.UnitWritableDir(t) + "/pids"
	spec := script(`sleep 300 & echo $! > ` + pids + `; sleep 300`)
	spec.WorkerTemplate.Timeout = &api.Duration{Duration: 3 * time.Second}
	h.project("slow", spec)
	ev := h.waitPhase(h.create("slow"), api.PhaseTimedOut)
	if !strings.Contains(ev.Status.Worker.Reason, "timed out") {
		t.Fatalf("reason %q", ev.Status.Worker.Reason)
	}
	testkit.Eventually(t, wait, "the timed-out worker cleaned up at once (grace is an hour)", func() bool {
		return !exists(h.unitDir(api.WorkerUnitID(ev.UID)) + "/workspace")
	})
	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, wait, "the worker's child killed with its process group", func() bool {
		return syscall.Kill(pid, 0) != nil
	})
}

func TestJob_FailsToStartWithAReason(t *testing.T) {
	h := startHarness(t, controllers.Config{})
	h.project("jobs", script(`curl -fsS --cacert "$CAIRN_CA_FILE" -H "Authorization: Bearer $CAIRN_TOKEN" -o /dev/null \
  -d '{"name":"ghost","spec":{"command":["no-such-command-cairn"]}}' \
  "$CAIRN_SERVER/apis/cairn.dev/v1alpha1/namespaces/$CAIRN_NAMESPACE/events/$CAIRN_EVENT/jobs"; sleep 300`))
	name := h.create("jobs")
	var job api.JobStatus
	testkit.Eventually(t, wait, "the job FAILED", func() bool {
		ev := h.get(name)
		if len(ev.Status.Jobs) == 1 {
			job = ev.Status.Jobs[0]
		}
		return job.Phase == api.PhaseFailed
	})
	if !strings.Contains(job.Reason, "failed to start") || !strings.Contains(job.Reason, "no-such-command-cairn") {
		t.Fatalf("job reason %q", job.Reason)
	}
	if got := h.get(name).Status.Worker.Phase; got != api.PhaseRunning {
		t.Fatalf("the worker is %s: a job's failure has no bearing on its worker", got)
	}
}

func TestCancel_AtEachPhase(t *testing.T) {
	h := startHarness(t, controllers.Config{EventMaxWorkers: 1, EventGracePeriod: time.Hour})
	pids := testkit.UnitWritableDir(t) + "/pids"
	h.project("long", script("echo $$ >> "+pids+"; sleep 300"))
	running := h.create("long")
	pending := h.create("long") // waits: one worker at a time
	ev := h.waitPhase(running, api.PhaseRunning)
	if got := h.get(pending).Status.Worker.Phase; got != api.PhasePending {
		t.Fatalf("second event is %s, want PENDING behind the capacity of 1", got)
	}
	if code, b := h.do("POST", "/namespaces/default/events/"+pending+"/cancel", "", nil); code != 200 {
		t.Fatalf("cancel pending: %d %s", code, b)
	}
	h.waitPhase(pending, api.PhaseCanceled)
	if code, b := h.do("POST", "/namespaces/default/events/"+running+"/cancel", "", nil); code != 200 {
		t.Fatalf("cancel running: %d %s", code, b)
	}
	h.waitPhase(running, api.PhaseAborted)
	testkit.Eventually(t, wait, "the aborted worker killed and cleaned up at once", func() bool {
		return !exists(h.unitDir(api.WorkerUnitID(ev.UID)) + "/workspace")
	})
	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(string(b)); len(f) != 1 {
		t.Fatalf("workers started: %v, want only the first (the second was canceled while PENDING)", f)
	} else if pid, _ := strconv.Atoi(f[0]); syscall.Kill(pid, 0) == nil {
		t.Fatalf("the aborted worker's process %d still runs", pid)
	}
	for _, name := range []string{running, pending} {
		if code, _ := h.do("POST", "/namespaces/default/events/"+name+"/cancel", "", nil); code != 409 {
			t.Fatalf("cancel of terminal %s = %d, want 409", name, code)
		}
	}
	if logs := h.logs(running, ""); logs != "" {
		t.Logf("logs of the aborted worker: %q", logs)
	}
}

func TestDelete_WhileRunningRemovesItsRuntimeResourcesAtOnce(t *testing.T) {
	h := startHarness(t, controllers.Config{EventGracePeriod: time.Hour})
	h.project("long", script("sleep 300"))
	name := h.create("long")
	ev := h.waitPhase(name, api.PhaseRunning)
	dir := h.unitDir(api.WorkerUnitID(ev.UID))
	if !exists(dir) {
		t.Fatalf("no unit at %s", dir)
	}
	if _, _, err := h.c.Delete(t.Context(), api.KindEvent, "default", name, api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, wait, "the deleted event's unit removed, logs and all", func() bool { return !exists(dir) })
}

func TestWorker_WithoutItsEventSecretFailsScheduling(t *testing.T) {
	h := startHarness(t, controllers.Config{})
	h.project("p", script("true"))
	// A write through the registry alone (no client does that: the
	// in-process one creates Events through the events endpoint too) gives
	// the Event no secrets: only the events endpoint writes them.
	obj, err := api.FromResource(&api.Event{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindEvent},
		ObjectMeta: api.ObjectMeta{Name: "bare", Namespace: "default"}, Spec: api.EventSpec{Project: "p", Source: "s", Type: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	created, err := h.d.Registry().Create(identity.With(t.Context(), identity.System()), obj)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := client.Convert[*api.Event](created)
	if err != nil {
		t.Fatal(err)
	}
	got := h.waitPhase(ev.Name, api.PhaseSchedulingFailed)
	if !strings.Contains(got.Status.Worker.Reason, "secrets") {
		t.Fatalf("reason %q, want it to name the missing secrets", got.Status.Worker.Reason)
	}
}

func TestLogs_FollowStreamsUntilTheWorkerEnds(t *testing.T) {
	h := startHarness(t, controllers.Config{})
	gate := t.TempDir() + "/go-on"
	h.project("talk", script(`echo one; while [ ! -f `+gate+` ]; do sleep 0.1; done; echo two`))
	name := h.create("talk")
	h.waitPhase(name, api.PhaseRunning)
	rc, err := h.c.ActionStream(t.Context(), client.ActionRequest{Method: "GET", Kind: api.KindEvent, Namespace: "default",
		Name: name, Action: "logs", Query: map[string][]string{"follow": {"true"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	buf := make([]byte, 4)
	if n, err := io.ReadFull(rc, buf); err != nil || string(buf[:n]) != "one\n" {
		t.Fatalf("first line %q, %v", buf[:n], err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(rc) // ends when the worker has ended
	if err != nil || string(rest) != "two\n" {
		t.Fatalf("rest %q, %v", rest, err)
	}
}

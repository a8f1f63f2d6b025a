package event_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
)

// The worker keeps a secret in its workspace and creates the job "attack",
// handing it the data dir and its own workspace; it waits for the job.
const isolationWorker = `set -eu
echo worker-private > "$CAIRN_WORKSPACE/private"
export CURL_CA_BUNDLE="$CAIRN_CA_FILE"
api="$CAIRN_SERVER/apis/cairn.dev/v1alpha1/namespaces/$CAIRN_NAMESPACE/events/$CAIRN_EVENT"
auth="Authorization: Bearer $CAIRN_TOKEN"
curl -fsS -H "$auth" -H 'Content-Type: application/json' -o /dev/null \
  -d '{"name":"attack","spec":{"command":["sh","'"$JOB_SCRIPT"'"],"env":{"DATA":"'"$DATA"'","WORKER_WS":"'"$CAIRN_WORKSPACE"'"}}}' "$api/jobs"
until curl -fsS -H "$auth" "$api" | grep -q '"phase":"SUCCEEDED"'; do sleep 0.1; done
`

// The job tries what the attacker did, and more; it can still use
// its own workspace and call the API with its own copy of the CA.
const isolationJob = `cat "$CAIRN_WORKSPACE/../../../../admin.token"; echo "relative=$?"
cat "$DATA/admin.token"; echo "token=$?"
cat "$DATA/encryption.key"; echo "key=$?"
ls "$DATA"; echo "datadir=$?"
cat "$WORKER_WS/private"; echo "worker=$?"
echo mine > "$CAIRN_WORKSPACE/mine" && cat "$CAIRN_WORKSPACE/mine"; echo "own=$?"
curl -fsS --cacert "$CAIRN_CA_FILE" -H "Authorization: Bearer $CAIRN_TOKEN" -o /dev/null \
  "$CAIRN_SERVER/apis/cairn.dev/v1alpha1/namespaces/$CAIRN_NAMESPACE/events/$CAIRN_EVENT"; echo "api=$?"
`

// TestEvent_JobCannotReadTheServersSecretsNorTheWorkers is the issue's
// attack: with nothing but an event's worker token, a job reads the admin
// token ($CAIRN_WORKSPACE/../../../../admin.token, or by its path), the
// encryption key, the data dir (the etcd data and socket) and its worker's
// workspace. Each is Permission denied; the job still writes its own files
// and calls the API.
func TestEvent_JobCannotReadTheServersSecretsNorTheWorkers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("units run as users of their own only when cairn runs as root")
	}
	testkit.UnitReachable(t)
	scripts := t.TempDir()
	worker, job := filepath.Join(scripts, "worker.sh"), filepath.Join(scripts, "job.sh")
	for path, script := range map[string]string{worker: isolationWorker, job: isolationJob} {
		if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The runtime dir sits beside the data dir: the job's
	// $CAIRN_WORKSPACE/../../../.. is the directory holding both.
	base := t.TempDir()
	data := filepath.Join(base, "data")
	d, c := clitest.StartDaemon(t, daemon.Options{DataDir: data, RuntimeDir: filepath.Join(base, "runtime"),
		Controllers: controllers.List(controllers.Config{})})
	token, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "admin.token"), token, 0o600); err != nil { // for the relative path
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.For[*api.Project](c).Create(ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: api.ProjectSpec{WorkerTemplate: api.WorkerSpec{Command: []string{"sh", worker},
			Env: map[string]string{"DATA": data, "JOB_SCRIPT": job}}}}); err != nil {
		t.Fatal(err)
	}
	r := clitest.Run(t, d.ClientConfig(), "event", "create", "--project", "p", "--source", "s", "--type", "t")
	name, ok := strings.CutPrefix(strings.TrimSpace(r.Out), "event/")
	if r.Error != nil || !ok {
		t.Fatalf("event create: %q %v", r.Out, r.Error)
	}
	name = strings.TrimSuffix(name, " created")
	testkit.Eventually(t, 60*time.Second, "the worker to end", func() bool {
		ev, err := client.For[*api.Event](c).Get(ctx, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		return ev.Status.Worker.Phase.Terminal()
	})
	out := clitest.Run(t, d.ClientConfig(), "logs", "event/"+name, "--job", "attack").Out
	if strings.Contains(out, strings.TrimSpace(string(token))) || strings.Contains(out, "worker-private") {
		t.Fatalf("the job read a secret that is not its own:\n%s", out)
	}
	for _, denied := range []string{"relative", "token", "key", "datadir", "worker"} {
		if strings.Contains(out, "\n"+denied+"=0\n") || strings.HasPrefix(out, denied+"=0\n") {
			t.Errorf("%s: allowed, want denied", denied)
		}
	}
	if n := strings.Count(out, "Permission denied"); n < 5 {
		t.Errorf("%d Permission denied, want 5", n)
	}
	for _, want := range []string{"mine\nown=0\n", "api=0\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the job could not use its own workspace or the API (want %q)", want)
		}
	}
	if t.Failed() {
		t.Fatalf("the job's log:\n%s", out)
	}
}

package event_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// referenceScript is a worker that writes, with its event's token, a
// container deploy item whose environment references the Secret db it
// may not read.
const referenceScript = `set -u
if [ -n "${CAIRN_CA_FILE:-}" ]; then export CURL_CA_BUNDLE="$CAIRN_CA_FILE"; fi
curl -sS -X POST -H "Authorization: Bearer $CAIRN_TOKEN" -H 'Content-Type: application/json' \
  "$CAIRN_SERVER/apis/cairn.dev/v1alpha1/namespaces/$CAIRN_NAMESPACE/deployitems" --data-binary @- <<'JSON'
{"apiVersion":"cairn.dev/v1alpha1","kind":"DeployItem","metadata":{"name":"peek"},
 "spec":{"type":"container","config":{"command":["sh","-c","echo \"$PW\""],"env":{"PW":"((cairn.dev/secret:db/password))"}}}}
JSON
`

// TestSecretReference_AHandWrittenItemGetsNoValueItsCreatorMayNotRead: a
// worker whose project may create and run deploy items, but not read
// Secrets, writes a container item referencing a Secret: the deployer
// resolves the reference as the item's creator, is refused, and fails
// the item saying who may not read what; the command never runs.
func TestSecretReference_AHandWrittenItemGetsNoValueItsCreatorMayNotRead(t *testing.T) {
	d, c := clitest.StartDaemon(t, daemon.Options{Controllers: controllers.List(controllers.Config{}), LeaderTTL: time.Second})
	ctx := context.Background()
	const ns = "refs"
	check := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check(client.For[*api.Namespace](c).Create(ctx, &api.Namespace{ObjectMeta: api.ObjectMeta{Name: ns}}))
	check(client.For[*api.Secret](c).Create(ctx, &api.Secret{ObjectMeta: api.ObjectMeta{Name: "db", Namespace: ns},
		StringData: map[string]string{"password": "change-me-0123"}}))
	check(client.For[*api.Project](c).Create(ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: "runner", Namespace: ns}, Spec: api.ProjectSpec{
		EventSubscriptions: []api.EventSubscription{{Source: "test", Types: []string{"peek"}}},
		WorkerPermissions:  []api.PermissionRule{{Kinds: []string{"DeployItem"}, Verbs: []string{"create", "get", "run"}}},
		WorkerTemplate:     api.WorkerSpec{Command: []string{"sh", "-c", referenceScript}, Timeout: &api.Duration{Duration: time.Minute}},
	}}))
	out := clitest.Run(t, d.ClientConfig(), "event", "create", "-n", ns, "--source", "test", "--type", "peek")
	if out.Error != nil {
		t.Fatalf("event create: %v %s", out.Error, out.Err)
	}
	var item *api.DeployItem
	testkit.EventuallyNil(t, 60*time.Second, "deploy item peek Failed (Forbidden)", func() error {
		var err error
		if item, err = client.For[*api.DeployItem](c).Get(ctx, ns, "peek"); err != nil {
			return err
		}
		if e := item.Status.LastError; item.Status.Phase != api.DeployFailed || e == nil {
			return fmt.Errorf("phase %q, lastError %+v", item.Status.Phase, e)
		}
		return nil
	})
	le := item.Status.LastError
	if le.Reason != api.ReasonCreatorForbidden || !strings.Contains(le.Message, `may not get secrets \"db\"`) &&
		!strings.Contains(le.Message, `may not get secrets "db"`) {
		t.Fatalf("lastError %+v: want Forbidden saying the creator may not get Secret db", le)
	}
	t.Logf("lastError: %s", le.Message)
	raw, _ := json.Marshal(item)
	if strings.Contains(string(raw), "change-me-0123") {
		t.Fatalf("the item holds the value: %s", raw)
	}
	if logs := clitest.Run(t, d.ClientConfig(), "logs", "deployitem/peek", "-n", ns); strings.Contains(logs.Out, "change-me-0123") {
		t.Fatalf("the command ran with the value: %s", logs.Out)
	}
}

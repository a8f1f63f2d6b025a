package event_test

import (
	"context"
	"errors"
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

// attackScript is a worker that tries, with its event's token alone, what
// an attacker would: each attempt prints "NAME: HTTP-CODE BODY".
const attackScript = `set -u
if [ -n "${CAIRN_CA_FILE:-}" ]; then export CURL_CA_BUNDLE="$CAIRN_CA_FILE"; fi
api="$CAIRN_SERVER/apis/cairn.dev/v1alpha1/namespaces/$CAIRN_NAMESPACE"
try() { # NAME METHOD PLURAL-AND-NAME BODY
  code=$(printf '%s' "$4" | curl -sS -o "$CAIRN_WORKSPACE/out" -w '%{http_code}' -X "$2" \
    -H "Authorization: Bearer $CAIRN_TOKEN" -H 'Content-Type: application/json' --data-binary @- "$api/$3")
  echo "$1: $code $(cat "$CAIRN_WORKSPACE/out")"
}
try container-item POST deployitems '{"apiVersion":"cairn.dev/v1alpha1","kind":"DeployItem","metadata":{"name":"steal"},"spec":{"type":"container","config":{"command":["sh","-c","cat /proc/1/environ"]}}}'
try secret-import POST installations '{"apiVersion":"cairn.dev/v1alpha1","kind":"Installation","metadata":{"name":"peek"},"spec":{"blueprint":{"inline":{}},"imports":{"data":[{"name":"pw","secretRef":{"name":"db"}}]}}}'
try cleaner-secret POST cleaners '{"apiVersion":"cairn.dev/v1alpha1","kind":"Cleaner","metadata":{"name":"wipe"},"spec":{"ttl":"1s","targets":[{"name":"s","reference":{"kind":"Secret","name":"db"},"delete":true}],"conditions":["s != null"]}}'
try own-project PUT projects/attacker '{"apiVersion":"cairn.dev/v1alpha1","kind":"Project","metadata":{"name":"attacker"},"spec":{"workerTemplate":{"command":["true"]},"workerPermissions":[{"kinds":["Secret","DeployItem"],"verbs":["get","run"]}]}}'
try render POST installations '{"apiVersion":"cairn.dev/v1alpha1","kind":"Installation","metadata":{"name":"render"},"spec":{"blueprint":{"inline":{"deployExecutions":[{"name":"items","template":"deployItems:\n- name: run\n  type: container\n  config: {command: [sh, -c, \"cat /proc/1/environ\"]}\n"}]}}}}'
try cleaner-record POST cleaners '{"apiVersion":"cairn.dev/v1alpha1","kind":"Cleaner","metadata":{"name":"tidy"},"spec":{"ttl":"1s","retry":{"period":"1h"},"targets":[{"name":"d","reference":{"kind":"DataObject","name":"keepme"},"delete":true}],"conditions":["\"go\" in d.metadata.labels"]}}'
`

// TestAttack_AWorkerTokenReachesNothingItsProjectDoesNotGrant plays the
// attacks of a worker holding only its event's token on a whole server:
// a container deploy item (directly, and rendered from an Installation),
// a Secret read through an import, a Secret deleted through a Cleaner, its
// own project's permissions rewritten. Each is refused naming the
// permission; the rendered item never exists; and a Cleaner whose creator
// loses the right to delete its target after its admission deletes
// nothing and says who may not delete what.
func TestAttack_AWorkerTokenReachesNothingItsProjectDoesNotGrant(t *testing.T) {
	d, c := clitest.StartDaemon(t, daemon.Options{Controllers: controllers.List(controllers.Config{}), LeaderTTL: time.Second})
	ctx := context.Background()
	const ns = "attack"
	check := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check(client.For[*api.Namespace](c).Create(ctx, &api.Namespace{ObjectMeta: api.ObjectMeta{Name: ns}}))
	check(client.For[*api.Secret](c).Create(ctx, &api.Secret{ObjectMeta: api.ObjectMeta{Name: "db", Namespace: ns},
		StringData: map[string]string{"password": "change-me"}}))
	check(client.For[*api.DataObject](c).Create(ctx, &api.DataObject{ObjectMeta: api.ObjectMeta{Name: "keepme", Namespace: ns,
		Labels: map[string]string{"a": "b"}}, Data: []byte(`{"kept": true}`)}))
	check(client.For[*api.Project](c).Create(ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: "attacker", Namespace: ns}, Spec: api.ProjectSpec{
		EventSubscriptions: []api.EventSubscription{{Source: "test", Types: []string{"attack"}}},
		WorkerPermissions: []api.PermissionRule{
			{Kinds: []string{"Installation", "DeployItem", "Cleaner"}, Verbs: []string{"create", "get"}},
			{Kinds: []string{"DataObject"}, Verbs: []string{"get", "delete"}},
		},
		WorkerTemplate: api.WorkerSpec{Command: []string{"sh", "-c", attackScript}, Timeout: &api.Duration{Duration: time.Minute}},
	}}))

	out := clitest.Run(t, d.ClientConfig(), "event", "create", "-n", ns, "--source", "test", "--type", "attack")
	name, ok := strings.CutPrefix(strings.TrimSpace(out.Out), "event/")
	if out.Error != nil || !ok {
		t.Fatalf("event create: %v %q %s", out.Error, out.Out, out.Err)
	}
	name = strings.TrimSuffix(name, " created")
	testkit.Eventually(t, 60*time.Second, "the attacker's worker to end", func() bool {
		ev, err := client.For[*api.Event](c).Get(ctx, ns, name)
		if err != nil {
			t.Fatal(err)
		}
		return ev.Status.Worker.Phase.Terminal()
	})
	logs := clitest.Run(t, d.ClientConfig(), "logs", "event/"+name, "-n", ns).Out
	for _, want := range []string{
		`container-item: 403 `, `may not run deployitems \"steal\"`,
		`secret-import: 403 `, `may not get secrets \"db\"`,
		`cleaner-secret: 403 `, `may not get secrets \"db\"`,
		`own-project: 403 `, `may not change the projects that define what workers may do`,
		`render: 201 `, `cleaner-record: 201 `,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the worker's logs do not say %q:\n%s", want, logs)
		}
	}
	if _, err := c.Get(ctx, api.KindSecret, ns, "db"); err != nil {
		t.Errorf("secret db: %v", err)
	}

	// The Installation it could create renders a container item its
	// creator may not run: it fails, naming the permission, and nothing
	// runs.
	testkit.EventuallyNil(t, 60*time.Second, "installation render Failed (Forbidden)", func() error {
		in, err := client.For[*api.Installation](c).Get(ctx, ns, "render")
		if err != nil {
			return err
		}
		if e := in.Status.LastError; in.Status.Phase != api.InstallationFailed || e == nil || e.Reason != "Forbidden" ||
			!strings.Contains(e.Message, "may not run deployitems") {
			return fmt.Errorf("phase %q, lastError %+v", in.Status.Phase, in.Status.LastError)
		}
		return nil
	})
	for _, kind := range []string{api.KindExecution, api.KindDeployItem} {
		if l, err := c.List(ctx, kind, ns, api.ListOptions{}); err != nil || len(l.Items) > 0 {
			t.Errorf("%s in %s: %v %v, want none", kind, ns, l, err)
		}
	}

	// The Cleaner was admitted while the project granted delete on
	// DataObjects. The grant goes; then its condition holds: it deletes
	// nothing, and its status says who may not delete what.
	p, err := client.For[*api.Project](c).Get(ctx, ns, "attacker")
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.WorkerPermissions[1].Verbs = []string{"get"}
	if _, err := client.For[*api.Project](c).Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Patch(ctx, api.KindDataObject, ns, "keepme", []byte(`{"metadata":{"labels":{"go":"yes"}}}`), false); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyNil(t, 60*time.Second, "the cleaner refused, naming the permission", func() error {
		cl, err := client.For[*api.Cleaner](c).Get(ctx, ns, "tidy")
		if err != nil {
			return err
		}
		if e := cl.Status.LastError; e == nil || e.Reason != api.CleanerReasonForbidden || !strings.Contains(e.Message, `may not delete dataobjects "keepme"`) {
			return fmt.Errorf("phase %q, lastError %+v", cl.Status.Phase, cl.Status.LastError)
		}
		return nil
	})
	if _, err := c.Get(ctx, api.KindDataObject, ns, "keepme"); errors.Is(err, api.ErrNotFound) {
		t.Fatal("the Cleaner deleted what its creator may no longer delete")
	}
}

package apply_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// secretValue is the Secret's value the test looks for everywhere.
const secretValue = "hunter2-s3cr3t-value"

// secretInstallation imports the key password of the Secret db and
// renders a container item that succeeds only when its environment and
// its imports file hold the value (it knows only the value's hash).
func secretInstallation() string {
	sum := sha256.Sum256([]byte(secretValue))
	hash := hex.EncodeToString(sum[:])
	return `apiVersion: cairn.dev/v1alpha1
kind: Namespace
metadata: {name: sec}
---
apiVersion: cairn.dev/v1alpha1
kind: Secret
metadata: {name: db, namespace: sec}
stringData: {password: ` + secretValue + `}
---
apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: app, namespace: sec}
spec:
  imports:
    data:
    - {name: password, secretRef: {name: db, key: password}}
  blueprint:
    inline:
      imports: [{name: password, schema: {type: string, minLength: 8}}]
      deployExecutions:
      - name: items
        template: |
          deployItems:
          - name: db
            type: container
            config:
              env: {PGPASSWORD: {{ .imports.password | quote }}}
              imports: {password: {{ .imports.password | quote }}}
              command:
              - sh
              - -c
              - |
                sum() { printf %s "$1" | sha256sum | cut -c1-64; }
                [ "$(sum "$PGPASSWORD")" = ` + hash + ` ] || { echo "no password in the environment"; exit 1; }
                pw=$(sed 's/.*"imports":{"password":"\([^"]*\)".*/\1/' "$CAIRN_IMPORTS")
                [ "$(sum "$pw")" = ` + hash + ` ] || { echo "no password in the imports file"; exit 1; }
                echo "connected"
`
}

// TestSecretImport_NoValueInAnyViewOfExecutionsAndDeployItems installs a
// blueprint importing a Secret on a whole server: its container item gets
// the value (in its environment and imports file) and succeeds, while
// every Execution and DeployItem, read as JSON, YAML, a table, describe,
// explain and a watch, carries only the reference.
func TestSecretImport_NoValueInAnyViewOfExecutionsAndDeployItems(t *testing.T) {
	d, c := clitest.StartDaemon(t, daemon.Options{Controllers: controllers.List(controllers.Config{}), LeaderTTL: time.Second})
	cfg := d.ClientConfig()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var watches []*clitest.Buffer
	var done []chan clitest.Result
	if r := clitest.RunContext(ctx, t, cfg, clitest.Cmd{Args: []string{"apply", "-f", "-"}, Stdin: "apiVersion: cairn.dev/v1alpha1\nkind: Namespace\nmetadata: {name: sec}\n"}, nil); r.Error != nil {
		t.Fatalf("apply the namespace: %v %s", r.Error, r.Err)
	}
	for _, args := range [][]string{
		{"get", "executions", "-n", "sec", "-w", "-o", "yaml"},
		{"get", "deployitems", "-n", "sec", "-w", "-o", "json"},
		{"get", "deployitems", "-n", "sec", "-w", "--output-watch-events"},
	} {
		out, ch := &clitest.Buffer{}, make(chan clitest.Result, 1)
		watches, done = append(watches, out), append(done, ch)
		go func() { ch <- clitest.RunContext(ctx, t, cfg, clitest.Cmd{Args: args}, out) }()
	}
	docs := strings.SplitN(secretInstallation(), "---\n", 2)[1]
	if r := clitest.RunContext(ctx, t, cfg, clitest.Cmd{Args: []string{"apply", "-f", "-"}, Stdin: docs}, nil); r.Error != nil {
		t.Fatalf("apply: %v %s", r.Error, r.Err)
	}
	testkit.EventuallyNil(t, 90*time.Second, "installation app Succeeded", func() error {
		in, err := client.For[*api.Installation](c).Get(ctx, "sec", "app")
		if err != nil {
			return err
		}
		if in.Status.Phase != api.InstallationSucceeded {
			r := clitest.Run(t, cfg, "explain", "deployitem/app-db", "-n", "sec")
			return fmt.Errorf("phase %s, lastError %+v\n%s", in.Status.Phase, in.Status.LastError, r.Out)
		}
		return nil
	})
	// The watches have seen the items' last writes (the execution's
	// Succeeded comes after its item's).
	testkit.Eventually(t, 30*time.Second, "the watches to see Succeeded", func() bool {
		return strings.Contains(watches[0].String(), "phase: Succeeded") && strings.Contains(watches[1].String(), `"Succeeded"`)
	})
	views := map[string]string{}
	for i, w := range watches {
		views[fmt.Sprintf("watch %d", i)] = w.String()
	}
	for _, kind := range []string{"execution", "deployitem"} {
		name := map[string]string{"execution": "app", "deployitem": "app-db"}[kind]
		for _, args := range [][]string{
			{"get", kind + "s", "-n", "sec", "-o", "json"},
			{"get", kind + "s", "-n", "sec", "-o", "yaml"},
			{"get", kind + "s", "-n", "sec", "-o", "wide"},
			{"get", kind + "s", "-n", "sec"},
			{"describe", kind, name, "-n", "sec"},
			{"explain", kind + "/" + name, "-n", "sec"},
		} {
			r := clitest.Run(t, cfg, args...)
			if r.Error != nil {
				t.Fatalf("cairn %s: %v %s", strings.Join(args, " "), r.Error, r.Err)
			}
			views["cairn "+strings.Join(args, " ")] = r.Out + r.Err
		}
	}
	ref := "((cairn.dev/secret:db/password@"
	for what, out := range views {
		if strings.Contains(out, secretValue) {
			t.Errorf("%s shows the Secret's value:\n%s", what, out)
		}
	}
	for _, what := range []string{"cairn get executions -n sec -o yaml", "cairn get deployitems -n sec -o json", "watch 1"} {
		if !strings.Contains(views[what], ref) {
			t.Errorf("%s does not show the reference %s...:\n%s", what, ref, views[what])
		}
	}
	if logs := clitest.Run(t, cfg, "logs", "deployitem/app-db", "-n", "sec").Out; !strings.Contains(logs, "connected") {
		t.Errorf("the item's command did not find the value: its logs:\n%s", logs)
	}
	cancel()
	for _, ch := range done {
		<-ch
	}
}

package explain_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/deployitem"
	"cairn.dev/cairn/internal/testkit"
)

// TestExplain_ExecutionSaysWhichItemFailedAndWhichTimeoutFired runs every
// controller of the server: `cairn explain` on an execution names the
// deploy item that failed and its error, and on a deploy item of a type no
// deployer handles, the pickup timeout that fired.
func TestExplain_ExecutionSaysWhichItemFailedAndWhichTimeoutFired(t *testing.T) {
	// A pickup timeout short enough for the test, long enough for the mock
	// deployer of a loaded machine to pick its items up first.
	cfg := controllers.Config{DeployItemTimeouts: deployitem.Timeouts{Pickup: 5 * time.Second}}
	d, c := clitest.StartDaemon(t, daemon.Options{Controllers: controllers.List(cfg), LeaderTTL: time.Second})
	ctx := context.Background()
	if _, err := c.Create(ctx, testkit.Object(api.KindNamespace, "", "demo")); err != nil {
		t.Fatal(err)
	}
	execution := func(name string, items ...api.DeployItemTemplate) {
		obj, err := api.FromResource(&api.Execution{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindExecution},
			ObjectMeta: api.ObjectMeta{Name: name, Namespace: "demo"}, Spec: api.ExecutionSpec{DeployItems: items}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	execution("shop",
		api.DeployItemTemplate{Name: "db", Type: "mock", Config: json.RawMessage(`{"export":{"port":5432}}`)},
		api.DeployItemTemplate{Name: "web", Type: "mock", Config: json.RawMessage(`{"phase":"Failed"}`), DependsOn: []string{"db"}})
	execution("chart", api.DeployItemTemplate{Name: "app", Type: "terraform"})

	explain := func(what string, want ...string) {
		t.Helper()
		var out string
		testkit.EventuallyNil(t, 60*time.Second, "explain "+what+" to say "+strings.Join(want, ", "), func() error {
			res := clitest.Run(t, d.ClientConfig(), "explain", what, "-n", "demo")
			out = res.Out + res.Err
			for _, w := range want {
				if !strings.Contains(out, w) || res.Error != nil {
					return fmt.Errorf("%v; it says:\n%s", res.Error, out)
				}
			}
			return nil
		})
		t.Logf("cairn explain %s:\n%s", what, out)
	}
	explain("execution/shop", "deploy item web failed: MockFailed", "deploy item db: class 1A")
	explain("deployitem/chart-app", "no deployer picked it up")
	explain("execution/chart", "app failed: PickupTimeout")

	res := clitest.Run(t, d.ClientConfig(), "get", "executions", "-n", "demo")
	if res.Error != nil || !strings.Contains(res.Out, "1/2") || !strings.Contains(res.Out, "Failed") {
		t.Fatalf("cairn get executions:\n%s%s", res.Out, res.Err)
	}
	res = clitest.Run(t, d.ClientConfig(), "get", "deployitems", "-n", "demo")
	if res.Error != nil || !strings.Contains(res.Out, "terraform") || !strings.Contains(res.Out, "mock") {
		t.Fatalf("cairn get deployitems:\n%s%s", res.Out, res.Err)
	}
}

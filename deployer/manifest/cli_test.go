package manifest_test

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
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/kubetest"
)

// TestManifest_CLIShowsManagedObjectsAndWhichIsNotReady runs every
// controller of the server: `cairn get deployitems` shows ready/total
// objects, `cairn describe` lists the managed objects, and `cairn
// explain` names the one that is not ready and why.
func TestManifest_CLIShowsManagedObjectsAndWhichIsNotReady(t *testing.T) {
	kc := kubetest.Start(t)
	d, c := clitest.StartDaemon(t, daemon.Options{Controllers: controllers.List(controllers.Config{}), LeaderTTL: time.Second})
	ctx := context.Background()
	for _, obj := range []*api.Object{
		testkit.Object(api.KindNamespace, "", "demo"),
		testkit.Secret("demo", "kc", map[string]string{"kubeconfig": string(kc.Kubeconfig())}),
		testkit.Object(api.KindTarget, "demo", "cluster", testkit.Spec(`{"type":"kubernetes-cluster","config":{"kubeconfig":{"secretRef":{"name":"kc"}}}}`)),
	} {
		if _, err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	item, err := api.FromResource(&api.DeployItem{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindDeployItem},
		ObjectMeta: api.ObjectMeta{Name: "web", Namespace: "demo"},
		Spec:       api.DeployItemSpec{Type: "manifest", Target: "cluster", Config: json.RawMessage(config("", cm("settings", `{}`, "keep"), deployment("web")))}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, item); err != nil {
		t.Fatal(err)
	}
	run := func(want string, args ...string) string {
		t.Helper()
		var out string
		testkit.EventuallyNil(t, 60*time.Second, fmt.Sprintf("cairn %s to say %q", strings.Join(args, " "), want), func() error {
			res := clitest.Run(t, d.ClientConfig(), append(args, "-n", "demo")...)
			out = res.Out + res.Err
			if res.Error != nil || !strings.Contains(out, want) {
				return fmt.Errorf("%v; it says:\n%s", res.Error, out)
			}
			return nil
		})
		return out
	}
	out := run("1/2", "get", "deployitems")
	if !strings.Contains(out, "OBJECTS") || !strings.Contains(out, "manifest") {
		t.Fatalf("cairn get deployitems:\n%s", out)
	}
	out = run("managed Deployment default/web (manage): not ready: its controller has not observed generation 1", "explain", "deployitem/web")
	if !strings.Contains(out, "managed ConfigMap default/settings (keep): ready") || !strings.Contains(out, "applied Deployment default/web") {
		t.Fatalf("cairn explain deployitem/web:\n%s", out)
	}
	run("Managed Objects:  ConfigMap default/settings (keep): ready", "describe", "deployitem", "web")
}

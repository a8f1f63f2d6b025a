package installation_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/deployer/container"
	"cairn.dev/cairn/execution"
	"cairn.dev/cairn/installation"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/runtime/local"
)

// TestExample_PlatformTargetFlowsFromTheClusterToTheApp applies
// examples/targets/platform.yaml with the installation and execution controllers
// and the container deployer on a local runtime: the cluster's target
// export becomes a Target in the platform's context, and the app's command
// finds it in its imports file.
func TestExample_PlatformTargetFlowsFromTheClusterToTheApp(t *testing.T) {
	testkit.UnitReachable(t)
	rt, err := local.New(local.Options{Root: filepath.Join(t.TempDir(), "runtime"), KillGrace: 2 * time.Second, PollInterval: 20 * time.Millisecond,
		Isolation: local.Isolation{None: os.Geteuid() != 0}}) // units get uids of their own when the tests run as root
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	e := deploytest.Start(t, deploytest.Options{Runtime: rt},
		manager.Controller{Name: "installation", Setup: func(tm *manager.Term) error {
			return installation.Setup(tm, installation.Options{Workers: 4})
		}},
		manager.Controller{Name: "execution", Setup: func(tm *manager.Term) error { return execution.Setup(tm, execution.Options{}) }},
		manager.Controller{Name: "deployer-container", Setup: container.Setup},
	)
	raw, err := os.ReadFile(filepath.Join("..", "examples", "targets", "platform.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(raw), "\n---\n")[1:] {
		var obj api.Object
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		e.Create(&obj)
	}
	const ns = "platform"
	insts := client.For[*api.Installation](e.C)
	testkit.EventuallyNil(t, deploytest.Wait, "the platform Succeeded", func() error {
		in, err := insts.Get(context.Background(), ns, "platform")
		if err != nil {
			return err
		}
		if in.Status.Phase != api.InstallationSucceeded {
			return errString("phase " + string(in.Status.Phase) + " " + statusString(in))
		}
		return nil
	})
	tg, err := client.For[*api.Target](e.C).Get(context.Background(), ns, "platform-cluster")
	if err != nil {
		t.Fatal(err)
	}
	if tg.Spec.Type != "kubernetes" || string(tg.Spec.Config) != `{"endpoint":"https://127.0.0.1:6443"}` {
		t.Fatalf("Target spec %s %s", tg.Spec.Type, tg.Spec.Config)
	}
	web, err := client.For[*api.DeployItem](e.C).Get(context.Background(), ns, "platform-app-web")
	if err != nil {
		t.Fatal(err)
	}
	if web.Spec.Target != "platform-cluster" || web.Status.Phase != api.DeploySucceeded {
		t.Fatalf("the app's deploy item: target %q, phase %s %+v", web.Spec.Target, web.Status.Phase, web.Status.LastError)
	}
}

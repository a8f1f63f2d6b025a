package manifest_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer/manifest"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/internal/testkit/kubetest"
	"cairn.dev/cairn/manager"
)

// startLogged runs a cluster, a cairn server with the Target "cluster",
// and the manifest deployer logging at debug level into the returned
// buffer.
func startLogged(t *testing.T) (*deploytest.Env, *testkit.Buffer) {
	e, logs, _ := startLoggedCluster(t)
	return e, logs
}

// startLoggedCluster is startLogged, returning the cluster too.
func startLoggedCluster(t *testing.T) (*deploytest.Env, *testkit.Buffer, *kubetest.Cluster) {
	t.Helper()
	kc := kubetest.Start(t)
	e := deploytest.Start(t, deploytest.Options{})
	e.Create(testkit.Secret(deploytest.NS, "kc", map[string]string{"kubeconfig": string(kc.Kubeconfig())}))
	e.Create(testkit.Object(api.KindTarget, deploytest.NS, "cluster", testkit.Spec(
		`{"type":"kubernetes-cluster","config":{"kubeconfig":{"secretRef":{"name":"kc"}}}}`)))
	logs := &testkit.Buffer{}
	m, err := manager.New(manager.Options{Client: e.C, Traces: e.Traces,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Controllers: []manager.Controller{{Name: "deployer-manifest", Setup: func(tm *manager.Term) error {
			return manifest.Setup(tm, manifest.Options{Poll: 200 * time.Millisecond})
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return e, logs, kc
}

// TestManifest_ARefusedSecretsValuesNeverInStatusLogsOrTrace: the
// apiserver refuses each Secret quoting the value it refuses (a list, a
// number where a string belongs); the item fails with its message, the
// values redacted.
func TestManifest_ARefusedSecretsValuesNeverInStatusLogsOrTrace(t *testing.T) {
	e, logs := startLogged(t)
	values := map[string]string{
		"list":   `{"password":["s3cr3t-pa55w0rd"]}`,
		"number": `{"pin":73519864}`,
	}
	for name, data := range values {
		cfg := `{"namespace":"default","manifests":[{"manifest":{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":` + data + `}}]}`
		e.Create(deploytest.Object(api.KindDeployItem, name, &api.DeployItem{Spec: api.DeployItemSpec{Type: "manifest", Target: "cluster",
			Config: json.RawMessage(cfg)}}))
	}
	for name := range values {
		d := e.WaitItem(name, "failed", func(d api.DeployItem) bool { return d.Status.Phase == api.DeployFailed })
		le := d.Status.LastError
		if le == nil || le.Reason != api.ReasonApplyFailed || !strings.Contains(le.Message, "config.manifests[0]") ||
			!strings.Contains(le.Message, "<redacted>") {
			t.Fatalf("item %s: lastError %+v: want ApplyFailed naming config.manifests[0], the apiserver's message redacted", name, le)
		}
		status, _ := json.Marshal(d.Status)
		for what, s := range map[string]string{"status": string(status), "log": logs.String(), "trace": e.Explain(api.KindDeployItem, name)} {
			for _, secret := range []string{"s3cr3t-pa55w0rd", "73519864"} {
				if strings.Contains(s, secret) {
					t.Fatalf("item %s: the Secret's value %s appears in the %s:\n%s", name, secret, what, s)
				}
			}
		}
	}
}

package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/deployer/kube"
	"cairn.dev/cairn/deployer/manifest"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/kubetest"
	"cairn.dev/cairn/manager"
)

// countingTransport counts the requests made to the cluster.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// manifestBlueprint renders one manifest item of five objects (three
// ConfigMaps, a Secret, a ServiceAccount) named after installation i.
func manifestBlueprint(i int) string {
	var objs []string
	for j := range 3 {
		objs = append(objs, fmt.Sprintf(`    - manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: mf-%d-%d}, data: {k: v}}`, i, j))
	}
	objs = append(objs,
		fmt.Sprintf(`    - manifest: {apiVersion: v1, kind: Secret, metadata: {name: mf-%d}, stringData: {k: v}}`, i),
		fmt.Sprintf(`    - manifest: {apiVersion: v1, kind: ServiceAccount, metadata: {name: mf-%d}}`, i))
	return "deployItems:\n- name: app\n  type: manifest\n  target: cluster\n  config:\n    namespace: default\n    manifests:\n" +
		strings.Join(objs, "\n") + "\n"
}

// BenchmarkManifestInstallations100: 100 root installations, each
// rendering one manifest deploy item of 5 objects into one real
// kube-apiserver, created at once over HTTP: the time until all are
// Succeeded and the requests the manifest deployer made to the cluster
// per item.
func BenchmarkManifestInstallations100(b *testing.B) {
	const n = 100
	kc := kubetest.Start(b)
	var requests atomic.Int64
	list := controllers.List(controllers.Config{GCWorkers: 32})
	for i, ctl := range list {
		if ctl.Name == "deployer-manifest" {
			list[i].Setup = func(t *manager.Term) error {
				cs := kube.NewClusters(t.Client, kube.Options{WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
					return countingTransport{rt: rt, n: &requests}
				}})
				return manifest.Setup(t, manifest.Options{Clusters: cs})
			}
		}
	}
	opts := daemon.Options{Listen: "127.0.0.1:0", DataDir: filepath.Join(b.TempDir(), "data"), Controllers: list,
		NamespaceMaxObjects: -1, NamespaceMaxBytes: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	clitest.RuntimeDefaults(b, &opts)
	d, err := daemon.Start(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Stop() })
	c := httpClient(b, d)
	ctx := context.Background()
	for _, obj := range []*api.Object{
		testkit.Secret("default", "kc", map[string]string{"kubeconfig": string(kc.Kubeconfig())}),
		testkit.Object(api.KindTarget, "default", "cluster", testkit.Spec(`{"type":"kubernetes-cluster","config":{"kubeconfig":{"secretRef":{"name":"kc"}}}}`)),
	} {
		if _, err := c.Create(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
	for iter := 0; iter < b.N; iter++ {
		rv := fmt.Sprint(revision(b, c))
		requests.Store(0)
		start := time.Now()
		for i := range n {
			spec := api.InstallationSpec{Blueprint: api.BlueprintReference{Inline: &api.BlueprintSpec{
				DeployExecutions: []api.TemplateExecutor{{Name: "items", Type: api.TemplateGo, Template: manifestBlueprint(iter*n + i)}},
			}}}
			if _, err := c.Create(ctx, installation(b, fmt.Sprintf("mf-%d", iter*n+i), spec)); err != nil {
				b.Fatal(err)
			}
		}
		awaitInstallations(b, c, rv, n, 5*time.Minute)
		took := time.Since(start)
		b.ReportMetric(took.Seconds(), "s/100-installations")
		b.ReportMetric(float64(requests.Load())/n, "cluster-requests/item")
	}
}

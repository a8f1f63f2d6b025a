package bench

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer/helm"
	"cairn.dev/cairn/execution"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/internal/testkit/kubetest"
	"cairn.dev/cairn/manager"
)

// helmReleases is the workload of BenchmarkHelmReleases.
const helmReleases = 50

// BenchmarkHelmReleases installs 50 Helm releases (one helm deploy item
// each, a chart of a ConfigMap and a Service, inline) into one real
// kube-apiserver, waits until every item has Succeeded, then changes
// every item's values and waits until every release is upgraded. It
// reports seconds per release for the install and for the upgrade
// (wall time of the whole batch divided by 50: releases are handled
// concurrently).
func BenchmarkHelmReleases(b *testing.B) {
	for i := 0; i < b.N; i++ {
		kc := kubetest.Start(b)
		e := deploytest.Start(b, deploytest.Options{},
			manager.Controller{Name: "execution", Setup: func(tm *manager.Term) error { return execution.Setup(tm, execution.Options{}) }},
			manager.Controller{Name: "deployer-helm", Setup: helm.Setup})
		e.Create(testkit.Secret(deploytest.NS, "kubeconfig", map[string]string{"kubeconfig": string(kc.Kubeconfig())}))
		e.Create(deploytest.Object(api.KindTarget, "cluster", &api.Target{Spec: api.TargetSpec{
			Type: api.TargetTypeKubernetesCluster, Config: json.RawMessage(`{"kubeconfig":{"secretRef":{"name":"kubeconfig"}}}`)}}))
		chart := benchChart(b)
		items := func(release, greeting string) []api.DeployItemTemplate {
			raw, _ := json.Marshal(map[string]any{"chart": map[string]any{"archive": map[string]any{"inline": chart}},
				"release": map[string]any{"name": release}, "values": map[string]any{"greeting": greeting}})
			return []api.DeployItemTemplate{{Name: "web", Type: helm.Type, Target: "cluster", Config: raw}}
		}
		name := func(r int) string { return fmt.Sprintf("r%02d", r) }
		b.ResetTimer()
		start := time.Now()
		for r := 0; r < helmReleases; r++ {
			e.Execution(name(r), items(name(r), "hello"))
		}
		waitAll(b, e, 1)
		installed := time.Since(start)
		start = time.Now()
		for r := 0; r < helmReleases; r++ {
			raw, _ := json.Marshal(map[string]any{"spec": map[string]any{"deployItems": items(name(r), "hello again")}})
			e.Patch(api.KindExecution, name(r), string(raw))
		}
		waitAll(b, e, 2)
		upgraded := time.Since(start)
		b.StopTimer()
		b.ReportMetric(installed.Seconds()/helmReleases, "s/install")
		b.ReportMetric(upgraded.Seconds()/helmReleases, "s/upgrade")
	}
}

// waitAll waits until every release's item has Succeeded at revision.
func waitAll(b *testing.B, e *deploytest.Env, revision int) {
	b.Helper()
	testkit.EventuallyNil(b, 5*time.Minute, fmt.Sprintf("%d releases at revision %d", helmReleases, revision), func() error {
		for r := 0; r < helmReleases; r++ {
			d, ok := deploytest.Get[api.DeployItem](e, api.KindDeployItem, fmt.Sprintf("r%02d-web", r))
			if !ok || d.Status.Phase != api.DeploySucceeded || d.Status.ObservedGeneration != d.Generation {
				return fmt.Errorf("r%02d-web not Succeeded yet", r)
			}
			var ps helm.ProviderStatus
			if err := json.Unmarshal(d.Status.ProviderStatus, &ps); err != nil || ps.Release.Revision != revision {
				return fmt.Errorf("r%02d-web at revision %d", r, ps.Release.Revision)
			}
		}
		return nil
	})
}

// benchChart is a base64 .tgz of a chart with a ConfigMap and a Service.
func benchChart(b *testing.B) string {
	files := map[string]string{
		"bench/Chart.yaml":  "apiVersion: v2\nname: bench\nversion: 0.1.0\n",
		"bench/values.yaml": "greeting: hello\n",
		"bench/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n" +
			"data:\n  greeting: {{ .Values.greeting | quote }}\n",
		"bench/templates/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}\n" +
			"spec:\n  ports: [{port: 80}]\n  selector: {app: {{ .Release.Name }}}\n",
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range []string{"bench/Chart.yaml", "bench/values.yaml", "bench/templates/cm.yaml", "bench/templates/svc.yaml"} {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			b.Fatal(err)
		}
		_, _ = tw.Write([]byte(files[name]))
	}
	_ = tw.Close()
	_ = gz.Close()
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

package helm_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer/helm"
	"cairn.dev/cairn/execution"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/internal/testkit/kubetest"
	"cairn.dev/cairn/manager"
)

// env is a cairn server with the execution controller and the helm
// deployer running against a real kube-apiserver, the deployer's log
// captured.
type env struct {
	*deploytest.Env
	kube *kubetest.Cluster
	cs   *kubernetes.Clientset
	log  *testkit.Buffer
}

// start runs a cluster, a cairn server, the Target "cluster" with its
// kubeconfig Secret, and the controllers; httpc is the deployer's client
// of chart servers (nil: the default).
func start(t *testing.T, httpc *http.Client) *env {
	t.Helper()
	kc := kubetest.Start(t)
	e := &env{Env: deploytest.Start(t, deploytest.Options{}), kube: kc, cs: kc.Clientset(), log: &testkit.Buffer{}}
	kc.CreateTarget(e.Ctx(), e.C, deploytest.NS, "cluster", "kubeconfig")
	logger := slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m, err := manager.New(manager.Options{Client: e.C, Logger: logger, Traces: e.Traces, Controllers: []manager.Controller{
		{Name: "execution", Setup: func(tm *manager.Term) error { return execution.Setup(tm, execution.Options{}) }},
		{Name: "deployer-helm", Setup: func(tm *manager.Term) error { return helm.SetupWith(tm, helm.Options{HTTP: httpc}) }},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

// demoChart is a chart of one ConfigMap, {{release}}-cm, whose label
// "demo" is .Values.label and data.greeting .Values.greeting.
func demoChart(version string) map[string]string {
	return map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: demo\nversion: " + version + "\nappVersion: \"1.0\"\n",
		"values.yaml": "greeting: hello\nlabel: ok\n",
		"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
  labels:
    demo: {{ .Values.label | quote }}
data:
  greeting: {{ .Values.greeting | quote }}
`,
	}
}

// pack makes a .tgz of a chart named name from files (deterministic:
// the same files give the same bytes).
func pack(t testing.TB, name string, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		hdr := &tar.Header{Name: name + "/" + p, Mode: 0o644, Size: int64(len(files[p])), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[p])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// item is a helm deploy item template on Target "cluster".
func item(name string, cfg map[string]any) api.DeployItemTemplate {
	raw, _ := json.Marshal(cfg)
	return api.DeployItemTemplate{Name: name, Type: helm.Type, Target: "cluster", Config: raw}
}

func inline(tgz []byte) map[string]any {
	return map[string]any{"archive": map[string]any{"inline": base64.StdEncoding.EncodeToString(tgz)}}
}

// providerStatus decodes a helm item's status.providerStatus.
func providerStatus(t testing.TB, d api.DeployItem) helm.ProviderStatus {
	t.Helper()
	var ps helm.ProviderStatus
	if err := json.Unmarshal(d.Status.ProviderStatus, &ps); err != nil {
		t.Fatalf("providerStatus %s: %v", d.Status.ProviderStatus, err)
	}
	return ps
}

// releaseSecrets lists Helm's storage of release name in ns, as `helm
// list` reads it: the revisions' Secrets (owner=helm), by version.
func (e *env) releaseSecrets(ns, name string) map[string]string {
	e.T.Helper()
	l, err := e.cs.CoreV1().Secrets(ns).List(e.Ctx(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range l.Items {
		if s.Type != "helm.sh/release.v1" {
			e.T.Fatalf("Secret %s has type %q, not Helm's", s.Name, s.Type)
		}
		out[s.Labels["version"]] = s.Labels["status"]
	}
	return out
}

func (e *env) configMap(ns, name string) (*corev1.ConfigMap, error) {
	return e.cs.CoreV1().ConfigMaps(ns).Get(e.Ctx(), name, metav1.GetOptions{})
}

func succeeded(d api.DeployItem) bool {
	return d.Status.Phase == api.DeploySucceeded && d.Status.ObservedGeneration == d.Generation
}

func failed(d api.DeployItem) bool {
	return d.Status.Phase == api.DeployFailed && d.Status.ObservedGeneration == d.Generation
}

func TestHelm_InstallsUpgradesOnlyOnAChangeAndUninstalls(t *testing.T) {
	e := start(t, nil)
	tgz := pack(t, "demo", demoChart("0.1.0"))
	cfg := map[string]any{"chart": inline(tgz), "release": map[string]any{"namespace": "apps"}, "createNamespace": true,
		"values": map[string]any{"greeting": "hi"},
		"exports": []any{
			map[string]any{"key": "greeting", "fromValues": "{.greeting}"},
			map[string]any{"key": "label", "fromValues": ".label"}, // a chart default
			map[string]any{"key": "cm", "resource": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "web-cm", "namespace": "apps"},
				"jsonPath": "{.data.greeting}"},
		}}
	e.Execution("app", []api.DeployItemTemplate{item("web", cfg)})
	d := e.WaitItem("app-web", "succeeded", succeeded)
	ps := providerStatus(t, d)
	if r := ps.Release; r.Name != "web" || r.Namespace != "apps" || r.Revision != 1 || r.Chart != "demo-0.1.0" || r.AppVersion != "1.0" || r.Status != "deployed" {
		t.Fatalf("providerStatus.release %+v: want web in apps, revision 1 of demo-0.1.0 (app 1.0), deployed", r)
	}
	if len(ps.ManagedResources) != 1 || ps.ManagedResources[0].Kind != "ConfigMap" || ps.ManagedResources[0].Name != "web-cm" ||
		ps.ManagedResources[0].Namespace != "apps" || !ps.ManagedResources[0].Ready {
		t.Fatalf("providerStatus.managedResources %+v: want the ready ConfigMap apps/web-cm", ps.ManagedResources)
	}
	if got := e.releaseSecrets("apps", "web"); len(got) != 1 || got["1"] != "deployed" {
		t.Fatalf("Helm's storage of release web: %v, want revision 1 deployed", got)
	}
	cm, err := e.configMap("apps", "web-cm")
	if err != nil || cm.Data["greeting"] != "hi" {
		t.Fatalf("ConfigMap apps/web-cm: %v %v, want greeting hi", cm, err)
	}
	if got := e.Data(d.Status.ExportRef); got["greeting"] != "hi" || got["label"] != "ok" || got["cm"] != "hi" {
		t.Fatalf("exports %v: want greeting and cm hi (values, object), label ok (chart default)", got)
	}

	// A new run without a change of chart or values: no new revision.
	e.Patch(api.KindDeployItem, "app-web", `{"metadata":{"annotations":{"`+api.AnnotationOperation+`":"`+api.OperationReconcile+`"}}}`)
	e.WaitItem("app-web", "reconciled again", func(x api.DeployItem) bool {
		return succeeded(x) && x.Status.LastReconcileTime.After(d.Status.LastReconcileTime) && x.Annotations[api.AnnotationOperation] == ""
	})
	if got := e.releaseSecrets("apps", "web"); len(got) != 1 {
		t.Fatalf("Helm's storage of release web after a reconcile without a change: %v, want revision 1 only", got)
	}

	// A change of values: an upgrade, revision 2.
	cfg["values"] = map[string]any{"greeting": "hello again"}
	raw, _ := json.Marshal(map[string]any{"spec": map[string]any{"deployItems": []api.DeployItemTemplate{item("web", cfg)}}})
	e.Patch(api.KindExecution, "app", string(raw))
	d = e.WaitItem("app-web", "upgraded", func(x api.DeployItem) bool { return succeeded(x) && x.Generation > d.Generation })
	if r := providerStatus(t, d).Release; r.Revision != 2 || r.Status != "deployed" {
		t.Fatalf("providerStatus.release %+v after a values change: want revision 2 deployed", r)
	}
	if got := e.releaseSecrets("apps", "web"); got["1"] != "superseded" || got["2"] != "deployed" {
		t.Fatalf("Helm's storage of release web after the upgrade: %v, want 1 superseded, 2 deployed", got)
	}
	if cm, err := e.configMap("apps", "web-cm"); err != nil || cm.Data["greeting"] != "hello again" {
		t.Fatalf("ConfigMap after the upgrade: %v %v", cm, err)
	}

	// Deletion uninstalls: the release and its objects go.
	e.Delete(api.KindExecution, "app")
	e.WaitGone(api.KindDeployItem, "app-web")
	if got := e.releaseSecrets("apps", "web"); len(got) != 0 {
		t.Fatalf("Helm's storage of release web after the deletion: %v, want none", got)
	}
	if _, err := e.configMap("apps", "web-cm"); !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap after the uninstall: %v, want NotFound", err)
	}
}

func TestHelm_FailedInstallFailsTheItemAndLeavesTheRelease(t *testing.T) {
	e := start(t, nil)
	cfg := map[string]any{"chart": inline(pack(t, "demo", demoChart("0.1.0"))),
		"values": map[string]any{"label": "not a label!"}}
	e.Execution("app", []api.DeployItemTemplate{item("web", cfg)})
	d := e.WaitItem("app-web", "failed", failed)
	if d.Status.LastError == nil || d.Status.LastError.Reason != api.ReasonInstallFailed || !strings.Contains(d.Status.LastError.Message, "web-cm") ||
		!strings.Contains(d.Status.LastError.Message, "metadata.labels") {
		t.Fatalf("lastError %+v: want InstallFailed with Helm's message naming the ConfigMap and its labels", d.Status.LastError)
	}
	if got := e.releaseSecrets(helm.DefaultNamespace, "web"); got["1"] != "failed" {
		t.Fatalf("Helm's storage of release web: %v, want revision 1 failed (inspectable)", got)
	}
	if r := providerStatus(t, d).Release; r.Status != "failed" || r.Revision != 1 {
		t.Fatalf("providerStatus.release %+v: want revision 1 failed", r)
	}
}

func TestHelm_SecretValueNeverInStatusLogsOrTrace(t *testing.T) {
	e := start(t, nil)
	const secret = "s3cr3t p@ss"
	cfg := map[string]any{"chart": inline(pack(t, "demo", demoChart("0.1.0"))),
		"values": map[string]any{"label": secret, "greeting": secret}}
	e.Execution("app", []api.DeployItemTemplate{item("web", cfg)})
	d := e.WaitItem("app-web", "failed", failed)
	if d.Status.LastError == nil || !strings.Contains(d.Status.LastError.Message, "<redacted>") {
		t.Fatalf("lastError %+v: want Helm's message with the offending value redacted", d.Status.LastError)
	}
	status, _ := json.Marshal(d.Status)
	for what, s := range map[string]string{"status": string(status), "log": e.log.String(),
		"trace": e.Explain(api.KindDeployItem, "app-web") + e.Explain(api.KindExecution, "app")} {
		if strings.Contains(s, secret) {
			t.Fatalf("the secret value appears in the %s:\n%s", what, s)
		}
	}
}

// repo serves a chart repository: index.yaml and the charts' .tgz, with
// basic authentication when user is set.
func repo(t *testing.T, user, pass string, charts map[string][]byte) *httptest.Server {
	t.Helper()
	var idx strings.Builder
	idx.WriteString("apiVersion: v1\nentries:\n  demo:\n")
	for v := range charts {
		fmt.Fprintf(&idx, "  - name: demo\n    version: %s\n    apiVersion: v2\n    urls: [charts/demo-%s.tgz]\n", v, v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/index.yaml", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(idx.String())) })
	mux.HandleFunc("/charts/", func(w http.ResponseWriter, r *http.Request) {
		for v, b := range charts {
			if r.URL.Path == "/charts/demo-"+v+".tgz" {
				_, _ = w.Write(b)
				return
			}
		}
		http.NotFound(w, r)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, _ := r.BasicAuth(); user != "" && (u != user || p != pass) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHelm_ChartFromARepositoryWithCredentials(t *testing.T) {
	srv := repo(t, "reader", "pw-123", map[string][]byte{
		"0.1.0": pack(t, "demo", demoChart("0.1.0")), "0.2.0": pack(t, "demo", demoChart("0.2.0"))})
	e := start(t, nil)
	e.Create(testkit.Secret(deploytest.NS, "repo-creds", map[string]string{"username": "reader", "password": "pw-123"}))
	repoCfg := func(version string) map[string]any {
		return map[string]any{"chart": map[string]any{"repository": map[string]any{"url": srv.URL, "name": "demo", "version": version,
			"credentials": map[string]any{"secretRef": map[string]any{"name": "repo-creds"}}}}}
	}
	e.Execution("app", []api.DeployItemTemplate{item("pinned", repoCfg("0.1.0")), item("latest", repoCfg("")), item("missing", repoCfg("9.9.9"))})
	if r := providerStatus(t, e.WaitItem("app-pinned", "succeeded", succeeded)).Release; r.Chart != "demo-0.1.0" {
		t.Fatalf("release of version 0.1.0: %+v", r)
	}
	if r := providerStatus(t, e.WaitItem("app-latest", "succeeded", succeeded)).Release; r.Chart != "demo-0.2.0" {
		t.Fatalf("release of the latest version: %+v, want demo-0.2.0", r)
	}
	d := e.WaitItem("app-missing", "failed", failed)
	if le := d.Status.LastError; le == nil || le.Reason != api.ReasonChartUnavailable || !strings.Contains(le.Message, `"9.9.9"`) ||
		!strings.Contains(le.Message, "0.1.0") || !strings.Contains(le.Message, "0.2.0") {
		t.Fatalf("lastError %+v: want ChartUnavailable naming 9.9.9 and listing 0.2.0, 0.1.0", d.Status.LastError)
	}
}

func TestHelm_ChartFromAnArchiveInASecret(t *testing.T) {
	e := start(t, nil)
	e.Create(testkit.Secret(deploytest.NS, "chart", map[string]string{"chart": string(pack(t, "demo", demoChart("0.3.0")))}))
	cfg := map[string]any{"chart": map[string]any{"archive": map[string]any{"secretRef": map[string]any{"name": "chart"}}}}
	e.Execution("app", []api.DeployItemTemplate{item("web", cfg)})
	if r := providerStatus(t, e.WaitItem("app-web", "succeeded", succeeded)).Release; r.Chart != "demo-0.3.0" || r.Status != "deployed" {
		t.Fatalf("release from the Secret's archive: %+v", r)
	}
}

package helm_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distribution/distribution/v3/configuration"
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory" // the registry's storage
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer/helm"
	"cairn.dev/cairn/execution"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/internal/testkit/kubetest"
	"cairn.dev/cairn/manager"
	"helm.sh/helm/v4/pkg/registry"
)

// clusterEnv is a cairn server running the execution controller and the
// helm deployer (with httpc as its client of chart sources), a real
// kube-apiserver and the Target "cluster" of it.
type clusterEnv struct {
	*deploytest.Env
	kc *kubetest.Cluster
	cs *kubernetes.Clientset
}

func startCluster(t *testing.T, httpc *http.Client) *clusterEnv {
	t.Helper()
	kc := kubetest.Start(t)
	e := deploytest.Start(t, deploytest.Options{},
		manager.Controller{Name: "execution", Setup: func(tm *manager.Term) error { return execution.Setup(tm, execution.Options{}) }},
		manager.Controller{Name: "deployer-helm", Setup: func(tm *manager.Term) error { return helm.SetupWith(tm, helm.Options{HTTP: httpc}) }})
	e.Create(testkit.Secret(deploytest.NS, "kc", map[string]string{"kubeconfig": string(kc.Kubeconfig())}))
	e.Create(testkit.Object(api.KindTarget, deploytest.NS, "cluster", testkit.Spec(
		`{"type":"kubernetes-cluster","config":{"kubeconfig":{"secretRef":{"name":"kc"}}}}`)))
	return &clusterEnv{Env: e, kc: kc, cs: kc.Clientset()}
}

// ociRegistry serves a real OCI registry (the distribution project's, in
// memory) over HTTPS on loopback; its client trusts it.
func ociRegistry(t *testing.T) *httptest.Server {
	t.Helper()
	cfg := &configuration.Configuration{Storage: configuration.Storage{"inmemory": configuration.Parameters{}}}
	cfg.Log.Level = "error"
	cfg.Log.AccessLog.Disabled = true
	srv := httptest.NewTLSServer(handlers.NewApp(context.Background(), cfg))
	t.Cleanup(srv.Close)
	return srv
}

// push pushes the chart tgz to ref (host/path/name:version) with Helm's
// registry client.
func push(t *testing.T, srv *httptest.Server, tgz []byte, ref string) {
	t.Helper()
	c, err := registry.NewClient(registry.ClientOptHTTPClient(srv.Client()),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Push(tgz, ref); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

func TestHelm_ChartFromAnOCIRegistry(t *testing.T) {
	srv := ociRegistry(t)
	host := strings.TrimPrefix(srv.URL, "https://")
	push(t, srv, pack(t, "demo", demoChart("0.4.0")), host+"/charts/demo:0.4.0")
	e := startCluster(t, srv.Client())
	ociCfg := func(ref string) map[string]any { return map[string]any{"chart": map[string]any{"ref": ref}} }
	e.Execution("app", []api.DeployItemTemplate{item("web", ociCfg("oci://"+host+"/charts/demo:0.4.0")),
		item("wrong", ociCfg("oci://"+host+"/charts/demo:9.9.9"))})

	d := e.WaitItem("app-web", "succeeded", succeeded)
	ps := providerStatus(t, d)
	if r := ps.Release; r.Chart != "demo-0.4.0" || r.Status != "deployed" || r.Revision != 1 {
		t.Fatalf("release of the OCI chart: %+v, want revision 1 of demo-0.4.0 deployed", r)
	}
	cm, err := e.cs.CoreV1().ConfigMaps(helm.DefaultNamespace).Get(e.Ctx(), "web-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's ConfigMap: %v", err)
	}
	if len(ps.ManagedResources) != 1 || ps.ManagedResources[0].UID != string(cm.UID) {
		t.Fatalf("managedResources %+v: want the ConfigMap web-cm with its uid %s", ps.ManagedResources, cm.UID)
	}

	w := e.WaitItem("app-wrong", "failed", failed)
	if le := w.Status.LastError; le == nil || le.Reason != api.ReasonChartUnavailable || !strings.Contains(le.Message, "demo:9.9.9") {
		t.Fatalf("lastError %+v: want ChartUnavailable naming the reference demo:9.9.9", le)
	}
}

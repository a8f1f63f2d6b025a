package manifest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer/kube"
	"cairn.dev/cairn/deployer/manifest"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/internal/testkit/kubetest"
	"cairn.dev/cairn/manager"
)

// env is a cairn server running the manifest deployer, a real
// kube-apiserver, and a Target "cluster" for it.
type env struct {
	*deploytest.Env
	kc *kubetest.Cluster
	k  *kubernetes.Clientset
}

// start starts the cluster, the server and the deployer (polling fast).
func start(t *testing.T) *env {
	kc := kubetest.Start(t)
	opts := manifest.Options{Poll: 200 * time.Millisecond}
	e := deploytest.Start(t, deploytest.Options{}, manager.Controller{Name: "deployer-manifest",
		Setup: func(tm *manager.Term) error { return manifest.Setup(tm, opts) }})
	kc.CreateTarget(e.Ctx(), e.C, deploytest.NS, "cluster", "kc")
	return &env{Env: e, kc: kc, k: kc.Clientset()}
}

// item creates the manifest deploy item name with config (and
// spec.timeout, when not empty).
func (e *env) item(name, config, timeout string) {
	e.T.Helper()
	d := &api.DeployItem{Spec: api.DeployItemSpec{Type: "manifest", Target: "cluster", Config: json.RawMessage(config)}}
	if timeout != "" {
		dur, err := time.ParseDuration(timeout)
		if err != nil {
			e.T.Fatal(err)
		}
		d.Spec.Timeout = &api.Duration{Duration: dur}
	}
	e.Create(deploytest.Object(api.KindDeployItem, name, d))
}

// setConfig replaces the config of item name.
func (e *env) setConfig(name, config string) {
	e.T.Helper()
	d, ok := deploytest.Get[api.DeployItem](e.Env, api.KindDeployItem, name)
	if !ok {
		e.T.Fatalf("no deploy item %s", name)
	}
	d.Spec.Config = json.RawMessage(config)
	obj, err := api.FromResource(&d)
	if err != nil {
		e.T.Fatal(err)
	}
	if _, err := e.C.Update(e.Ctx(), obj); err != nil {
		e.T.Fatalf("update deploy item %s: %v", name, err)
	}
}

// wait waits until item name has observed its generation and reached
// phase, and returns it.
func (e *env) wait(name string, phase api.DeployPhase) api.DeployItem {
	e.T.Helper()
	return e.WaitItem(name, string(phase), func(d api.DeployItem) bool {
		return d.Status.Phase == phase && d.Status.ObservedGeneration == d.Generation
	})
}

// managed decodes an item's status.providerStatus.
func managed(t *testing.T, d api.DeployItem) kube.ProviderStatus {
	t.Helper()
	var ps kube.ProviderStatus
	if err := json.Unmarshal(d.Status.ProviderStatus, &ps); err != nil {
		t.Fatalf("providerStatus %s: %v", d.Status.ProviderStatus, err)
	}
	return ps
}

// cmData returns ConfigMap ns/name's data, or nil when it does not exist.
func (e *env) cmData(ns, name string) map[string]string {
	cm, err := e.k.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	if cm.Data == nil {
		return map[string]string{}
	}
	return cm.Data
}

// waitCM waits until ConfigMap ns/name exists (want true) or not.
func (e *env) waitCM(ns, name string, want bool) {
	e.T.Helper()
	testkit.Eventually(e.T, deploytest.Wait, fmt.Sprintf("ConfigMap %s/%s exists=%t", ns, name, want), func() bool {
		return (e.cmData(ns, name) != nil) == want
	})
}

// cm is a manifest entry of ConfigMap name with data (a JSON object) and
// policy ("" for the default).
func cm(name, data, policy string) string {
	p := ""
	if policy != "" {
		p = fmt.Sprintf(`"policy":%q,`, policy)
	}
	return fmt.Sprintf(`{%s"manifest":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":%s}}`, p, name, data)
}

// config is a manifest config into namespace default of entries, with
// extra members (",readiness:..." say) appended.
func config(extra string, entries ...string) string {
	return `{"namespace":"default","manifests":[` + strings.Join(entries, ",") + `]` + extra + `}`
}

// deployment is a manifest entry of a Deployment of one replica.
func deployment(name string) string {
	return fmt.Sprintf(`{"manifest":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":%q},
		"spec":{"replicas":1,"selector":{"matchLabels":{"app":%q}},"template":{"metadata":{"labels":{"app":%q}},
		"spec":{"containers":[{"name":"c","image":"example.com/app:1"}]}}}}}`, name, name, name)
}

// makeReady writes Deployment default/name's status as its controller
// would once its one replica is available (no kubelet runs).
func (e *env) makeReady(name string) {
	e.T.Helper()
	ctx := context.Background()
	testkit.EventuallyNil(e.T, deploytest.Wait, "Deployment "+name+" status written", func() error {
		d, err := e.k.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Status.ObservedGeneration = d.Generation
		d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = 1, 1, 1, 1
		_, err = e.k.AppsV1().Deployments("default").UpdateStatus(ctx, d, metav1.UpdateOptions{})
		return err
	})
}

// cmObject is ConfigMap default/name with data v=v.
func cmObject(name, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{"v": v}}
}

// getItem reads deploy item name.
func getItem(e *env, name string) (api.DeployItem, bool) {
	return deploytest.Get[api.DeployItem](e.Env, api.KindDeployItem, name)
}

package manifest_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
)

// TestManifest_SecretReferencesResolveOnlyInTheCluster: an item whose
// manifests reference a cairn Secret's key (a Kubernetes Secret's
// stringData, a ConfigMap value around it) puts the value into the
// cluster's objects; the item, its trace and the deployer's logs carry the
// reference only. A reference to a missing key fails the item naming it.
func TestManifest_SecretReferencesResolveOnlyInTheCluster(t *testing.T) {
	e, logs, kc := startLoggedCluster(t)
	const value = "s3cr3t-pa55w0rd"
	e.Create(testkit.Secret(deploytest.NS, "db", map[string]string{"password": value}))
	ref := api.SecretReference{Name: "db", Key: "password", Version: "7"}.String()
	cfg := `{"namespace":"default","manifests":[
{"manifest":{"apiVersion":"v1","kind":"Secret","metadata":{"name":"app-db"},"stringData":{"password":"` + ref + `"}}},
{"manifest":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app"},"data":{"url":"pg://app:` + ref + `@db"}}}]}`
	e.Create(deploytest.Object(api.KindDeployItem, "app", &api.DeployItem{Spec: api.DeployItemSpec{Type: "manifest", Target: "cluster",
		Config: json.RawMessage(cfg)}}))
	missing := strings.ReplaceAll(cfg, "db/password", "db/pin")
	e.Create(deploytest.Object(api.KindDeployItem, "missing", &api.DeployItem{Spec: api.DeployItemSpec{Type: "manifest", Target: "cluster",
		Config: json.RawMessage(strings.ReplaceAll(missing, `"app`, `"other`))}}))

	d := e.WaitItem("app", "succeeded", func(d api.DeployItem) bool { return d.Status.Phase == api.DeploySucceeded })
	k := kc.Clientset()
	ctx := context.Background()
	sec, err := k.CoreV1().Secrets("default").Get(ctx, "app-db", metav1.GetOptions{})
	if err != nil || string(sec.Data["password"]) != value {
		t.Fatalf("the cluster's Secret app-db: %v, want the value", err)
	}
	cm, err := k.CoreV1().ConfigMaps("default").Get(ctx, "app", metav1.GetOptions{})
	if err != nil || cm.Data["url"] != "pg://app:"+value+"@db" {
		t.Fatalf("the cluster's ConfigMap app: %v, want the value inside the url", err)
	}
	raw, _ := json.Marshal(d)
	for what, s := range map[string]string{"item": string(raw), "log": logs.String(), "trace": e.Explain(api.KindDeployItem, "app")} {
		if strings.Contains(s, value) {
			t.Fatalf("the Secret's value appears in the %s:\n%s", what, s)
		}
	}
	m := e.WaitItem("missing", "failed", func(d api.DeployItem) bool { return d.Status.Phase == api.DeployFailed })
	if le := m.Status.LastError; le == nil || le.Reason != api.ReasonSecretNotFound || !strings.Contains(le.Message, `has no key "pin"`) {
		t.Fatalf("item missing: lastError %+v, want SecretNotFound naming the key", le)
	}
}

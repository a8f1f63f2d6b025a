package manifest_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer"
)

// TestManifest_ReadinessWaitsForTheDeploymentThenExports: the item stays
// Progressing, naming the Deployment that is not ready and why, until the
// Deployment's status says its replica is available; a custom check waits
// for a value; then the exports are read from the objects.
func TestManifest_ReadinessWaitsForTheDeploymentThenExports(t *testing.T) {
	e := start(t)
	custom := `,"readiness":{"custom":[{"name":"flag","resource":{"apiVersion":"v1","kind":"ConfigMap","name":"settings","namespace":"default"},
		"jsonPath":".data.state","in":["on","green"]}]},
		"exports":[{"key":"url","resource":{"apiVersion":"v1","kind":"ConfigMap","name":"settings","namespace":"default"},"jsonPath":".data.url"},
		{"key":"replicas","resource":{"apiVersion":"apps/v1","kind":"Deployment","name":"web","namespace":"default"},"jsonPath":"{.spec.replicas}"}]`
	e.item("web", config(custom, cm("settings", `{"url":"http://web","state":"off"}`, ""), deployment("web")), "")
	d := e.WaitItem("web", "Progressing, neither object ready", func(d api.DeployItem) bool {
		return d.Status.Phase == api.DeployProgressing && len(d.Status.ProviderStatus) > 0 && managed(t, d).Ready == "0/2"
	})
	if r := managed(t, d).ManagedResources[1]; r.Ready || !strings.Contains(r.Message, "has not observed generation 1") {
		t.Fatalf("Deployment record %+v: want not ready, saying why", r)
	}
	e.WaitExplain(api.KindDeployItem, "web", "not ready (0/2): Deployment default/web: its controller has not observed generation 1")

	e.makeReady("web")
	e.WaitExplain(api.KindDeployItem, "web", "custom check flag: .data.state is off, not one of \"on\", \"green\"")
	if d, _ := getItem(e, "web"); d.Status.Phase != api.DeployProgressing {
		t.Fatalf("phase %s while the custom check fails", d.Status.Phase)
	}
	if _, err := e.k.CoreV1().ConfigMaps("default").Patch(context.Background(), "settings", "application/merge-patch+json",
		[]byte(`{"data":{"state":"green"}}`), metav1.PatchOptions{FieldManager: "operator"}); err != nil {
		t.Fatal(err)
	}
	d = e.wait("web", api.DeploySucceeded)
	if ps := managed(t, d); ps.Ready != "2/2" {
		t.Fatalf("ready %s after success", ps.Ready)
	}
	if d.Status.ExportRef != deployer.ExportName("web") {
		t.Fatalf("exportRef %q", d.Status.ExportRef)
	}
	data := e.Data(d.Status.ExportRef)
	if data["url"] != "http://web" || data["replicas"] != float64(1) {
		t.Fatalf("exports %v, want url and replicas", data)
	}
}

// TestManifest_ReadinessTimesOutNamingTheObject: a Deployment that never
// becomes ready fails the item at its progressing timeout, naming it and
// why.
func TestManifest_ReadinessTimesOutNamingTheObject(t *testing.T) {
	e := start(t)
	e.item("slow", config("", deployment("slow")), "3s")
	d := e.wait("slow", api.DeployFailed)
	if le := d.Status.LastError; le == nil || le.Reason != api.ReasonNotReady ||
		!strings.Contains(le.Message, "Deployment default/slow is not ready within the progressing timeout: its controller has not observed generation 1") {
		t.Fatalf("lastError %+v", d.Status.LastError)
	}
}

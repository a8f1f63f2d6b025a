package manifest_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer/kube"
	"cairn.dev/cairn/internal/testkit/deploytest"
)

// TestManifest_AppliesUpdatesAndPrunesWithEachPolicy applies objects of
// each policy, updates them, prunes what is no longer rendered, and
// deletes the item: manage objects follow the item, keep objects stay,
// ignore objects are created when missing and never changed.
func TestManifest_AppliesUpdatesAndPrunesWithEachPolicy(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	// An object that exists before: policy ignore leaves it as it is.
	if _, err := e.k.CoreV1().ConfigMaps("default").Create(ctx, cmObject("pre", "old"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.item("app", config("",
		cm("managed", `{"v":"1"}`, ""), cm("kept", `{"v":"1"}`, "keep"), cm("pre", `{"v":"new"}`, "ignore"), cm("fresh", `{"v":"1"}`, "ignore"),
		cm("gone-later", `{"v":"1"}`, "manage"), cm("kept-later", `{"v":"1"}`, "keep")), "")
	d := e.wait("app", api.DeploySucceeded)
	ps := managed(t, d)
	if len(ps.ManagedResources) != 6 || ps.Ready != "6/6" {
		t.Fatalf("managedResources %+v (ready %s), want the 6 objects", ps.ManagedResources, ps.Ready)
	}
	for _, r := range ps.ManagedResources {
		if r.UID == "" || r.Namespace != "default" || r.Kind != "ConfigMap" {
			t.Fatalf("managed resource %+v: want uid and namespace default", r)
		}
	}
	if got := ps.ManagedResources[1].Policy; got != kube.PolicyKeep {
		t.Fatalf("kept has policy %q", got)
	}
	if v := e.cmData("default", "pre")["v"]; v != "old" {
		t.Fatalf("ignore changed an existing object: v=%q", v)
	}
	if v := e.cmData("default", "fresh")["v"]; v != "1" {
		t.Fatalf("ignore did not create a missing object: v=%q", v)
	}
	obj, err := e.k.CoreV1().ConfigMaps("default").Get(ctx, "managed", metav1.GetOptions{})
	if err != nil || len(obj.ManagedFields) == 0 || obj.ManagedFields[0].Manager != "cairn/"+deploytest.NS+"/app" ||
		obj.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("managed fields of ConfigMap managed: %+v (%v), want an apply by cairn/%s/app", obj.ManagedFields, err, deploytest.NS)
	}

	// Update: values change (ignore's do not), two objects are no longer rendered.
	e.setConfig("app", config("",
		cm("managed", `{"v":"2"}`, ""), cm("kept", `{"v":"2"}`, "keep"), cm("pre", `{"v":"newer"}`, "ignore"), cm("fresh", `{"v":"2"}`, "ignore")))
	d = e.wait("app", api.DeploySucceeded)
	if got := e.cmData("default", "managed")["v"]; got != "2" {
		t.Fatalf("update: managed v=%q, want 2", got)
	}
	if got := e.cmData("default", "kept")["v"]; got != "2" {
		t.Fatalf("update: kept v=%q, want 2", got)
	}
	if got := e.cmData("default", "fresh")["v"]; got != "1" {
		t.Fatalf("update: ignore changed fresh to v=%q", got)
	}
	e.waitCM("default", "gone-later", false)
	if e.cmData("default", "kept-later") == nil {
		t.Fatalf("prune deleted kept-later, whose policy is keep")
	}
	if n := len(managed(t, d).ManagedResources); n != 4 {
		t.Fatalf("after the prune, %d managed resources, want 4", n)
	}
	if !strings.Contains(e.Explain(api.KindDeployItem, "app"), "pruned ConfigMap default/gone-later") {
		t.Fatalf("the trace does not say what was pruned:\n%s", e.Explain(api.KindDeployItem, "app"))
	}

	// Deletion: manage objects go, keep and ignore ones stay.
	e.Delete(api.KindDeployItem, "app")
	e.WaitGone(api.KindDeployItem, "app")
	if e.cmData("default", "managed") != nil {
		t.Fatalf("deletion left ConfigMap managed")
	}
	for _, name := range []string{"kept", "pre", "fresh", "kept-later"} {
		if e.cmData("default", name) == nil {
			t.Fatalf("deletion deleted ConfigMap %s, whose policy is keep or ignore", name)
		}
	}
}

package manifest_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
)

// crd is a manifest entry of a CustomResourceDefinition widgets.example.com.
const crd = `{"manifest":{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},
	"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget"},
	"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}}`

// TestManifest_DeletionInReverseOrderWaitsForEachObject: objects are
// deleted in reverse order of application with the CRD last, one at a
// time: an object held by a finalizer blocks those after it, and explain
// names it.
func TestManifest_DeletionInReverseOrderWaitsForEachObject(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	held := `{"manifest":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","finalizers":["example.com/hold"]}}}`
	widget := `{"manifest":{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1}}}`
	// Applied: first, the CRD, a Widget of it, held, last.
	e.item("app", config("", cm("first", `{}`, ""), crd, widget, held, cm("last", `{}`, "")), "")
	d := e.wait("app", api.DeploySucceeded)
	if n := len(managed(t, d).ManagedResources); n != 5 {
		t.Fatalf("%d managed resources, want 5", n)
	}

	e.Delete(api.KindDeployItem, "app")
	e.waitCM("default", "last", false)
	e.WaitExplain(api.KindDeployItem, "app", "ConfigMap default/held blocks the deletion: it is being deleted (finalizers: example.com/hold)")
	if e.cmData("default", "first") == nil {
		t.Fatalf("ConfigMap first (applied before held) was deleted while held still blocks")
	}
	d = e.WaitItem("app", "Deleting, recording what blocks", func(d api.DeployItem) bool {
		return d.Status.Phase == api.DeployDeleting && strings.Contains(string(d.Status.ProviderStatus), "being deleted (finalizers: example.com/hold)")
	})
	if n := len(managed(t, d).ManagedResources); n != 4 {
		t.Fatalf("while held blocks: %d managed resources, want 4 (last is gone)", n)
	}

	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": nil}})
	if _, err := e.k.CoreV1().ConfigMaps("default").Patch(ctx, "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitGone(api.KindDeployItem, "app")
	e.waitCM("default", "first", false)
	out := e.Explain(api.KindDeployItem, "app")
	order := []string{"deleting ConfigMap default/last", "deleting ConfigMap default/held", "deleting Widget default/w",
		"deleting ConfigMap default/first", "deleting CustomResourceDefinition widgets.example.com"}
	at := 0
	for _, step := range order {
		i := strings.Index(out[at:], step)
		if i < 0 {
			t.Fatalf("deletion steps out of order: %q not after the previous ones in\n%s", step, out)
		}
		at += i
	}
	testkit.EventuallyNil(t, deploytest.Wait, "CRD widgets.example.com gone", func() error {
		_, err := e.k.Discovery().RESTClient().Get().AbsPath("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com").DoRaw(ctx)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// TestManifest_FieldConflictBetweenTwoItemsFailsNamingIt: a second item
// setting a field the first one manages fails, naming the conflict; the
// first item's value stays.
func TestManifest_FieldConflictBetweenTwoItemsFailsNamingIt(t *testing.T) {
	e := start(t)
	e.item("a", config("", cm("shared", `{"owner":"a"}`, "")), "")
	e.wait("a", api.DeploySucceeded)
	e.item("b", config("", cm("shared", `{"owner":"b"}`, "")), "")
	d := e.wait("b", api.DeployFailed)
	le := d.Status.LastError
	if le == nil || le.Reason != api.ReasonFieldConflict || !strings.Contains(le.Message, "config.manifests[0] ConfigMap shared") ||
		!strings.Contains(le.Message, `conflict with "cairn/deploy/a"`) || !strings.Contains(le.Message, ".data.owner") {
		t.Fatalf("lastError %+v: want the conflict with cairn/deploy/a on .data.owner", le)
	}
	if v := e.cmData("default", "shared")["owner"]; v != "a" {
		t.Fatalf("owner=%q: the conflicting item changed the field", v)
	}
}

// TestManifest_RenderedEntryWithoutKindFailsTheItemNamingTheEntry: a
// rendered config (an item of an execution) that admission does not check
// fails the item, naming the entry's index.
func TestManifest_RenderedEntryWithoutKindFailsTheItemNamingTheEntry(t *testing.T) {
	e := start(t)
	owner := e.Create(testkit.Object(api.KindDataObject, deploytest.NS, "owner", testkit.Field("data", `{}`)))
	d := &api.DeployItem{Spec: api.DeployItemSpec{Type: "manifest", Target: "cluster",
		Config: json.RawMessage(config("", cm("ok", `{}`, ""), `{"manifest":{"apiVersion":"v1","metadata":{"name":"x"}}}`))}}
	d.OwnerReferences = []api.OwnerReference{{APIVersion: api.APIVersion, Kind: api.KindDataObject, Name: "owner", UID: owner.UID, Controller: true}}
	e.Create(deploytest.Object(api.KindDeployItem, "rendered", d))
	got := e.wait("rendered", api.DeployFailed)
	if le := got.Status.LastError; le == nil || le.Reason != api.ReasonInvalidConfig || !strings.Contains(le.Message, "config.manifests[1].manifest.kind is required") {
		t.Fatalf("lastError %+v", le)
	}
}

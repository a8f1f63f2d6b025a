package manifest_test

import (
	"strings"
	"testing"

	"cairn.dev/cairn/api"
)

// TestManifest_ApiserverStoppedMidDeployConverges: while the item waits
// for its Deployment the apiserver stops; the item keeps Progressing,
// saying in lastError and the trace that it retries; once the apiserver
// is back the item succeeds.
func TestManifest_ApiserverStoppedMidDeployConverges(t *testing.T) {
	e := start(t)
	e.item("web", config("", deployment("web")), "")
	e.WaitExplain(api.KindDeployItem, "web", "not ready (0/1): Deployment default/web")
	e.kc.Stop()
	d := e.WaitItem("web", "saying the cluster does not answer", func(d api.DeployItem) bool {
		return d.Status.LastError != nil && d.Status.LastError.Reason == api.ReasonClusterUnreachable
	})
	if d.Status.Phase != api.DeployProgressing || !strings.Contains(d.Status.LastError.Message, "the cluster of Target cluster does not answer") ||
		!strings.Contains(d.Status.LastError.Message, "retrying with backoff until the progressing timeout at") {
		t.Fatalf("phase %s, lastError %+v", d.Status.Phase, d.Status.LastError)
	}
	e.WaitExplain(api.KindDeployItem, "web", "retrying with backoff")
	e.kc.Restart()
	e.makeReady("web")
	d = e.wait("web", api.DeploySucceeded)
	if d.Status.LastError != nil {
		t.Fatalf("lastError %+v after success", d.Status.LastError)
	}
}

// TestManifest_DeletionWhoseClusterIsGoneNamesTheWayOut: the uninstall of
// an item whose cluster no longer answers fails after its timeout, naming
// cairn.dev/delete-without-uninstall; with it, the item goes.
func TestManifest_DeletionWhoseClusterIsGoneNamesTheWayOut(t *testing.T) {
	e := start(t)
	e.item("app", config("", cm("a", `{}`, "")), "2s")
	e.wait("app", api.DeploySucceeded)
	e.kc.Stop()
	e.Delete(api.KindDeployItem, "app")
	d := e.WaitItem("app", "failing its uninstall", func(d api.DeployItem) bool {
		return d.Status.Phase == api.DeployFailed && d.Status.LastError != nil
	})
	if le := d.Status.LastError; le.Reason != api.ReasonUninstallFailed || !strings.Contains(le.Message, "did not answer the uninstall") ||
		!strings.Contains(le.Message, `annotate the deploy item cairn.dev/delete-without-uninstall: "true"`) {
		t.Fatalf("lastError %+v", le)
	}
	e.Patch(api.KindDeployItem, "app", `{"metadata":{"annotations":{"cairn.dev/delete-without-uninstall":"true"}}}`)
	e.WaitGone(api.KindDeployItem, "app")
}

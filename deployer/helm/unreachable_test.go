package helm_test

import (
	"encoding/json"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
)

func TestHelm_UnreachableClusterIsRetriedSayingSoThenConverges(t *testing.T) {
	e := startCluster(t, nil)
	e.kc.Stop()
	e.Execution("app", []api.DeployItemTemplate{item("web", map[string]any{"chart": inline(pack(t, "demo", demoChart("0.1.0")))})})
	d := e.WaitItem("app-web", "saying the cluster does not answer", func(d api.DeployItem) bool {
		return d.Status.LastError != nil && d.Status.LastError.Reason == api.ReasonClusterUnreachable
	})
	if d.Status.Phase != api.DeployProgressing || !strings.Contains(d.Status.LastError.Message, "the cluster of target cluster did not answer (retrying)") {
		t.Fatalf("phase %s, lastError %+v: want Progressing, saying the cluster did not answer and it retries", d.Status.Phase, d.Status.LastError)
	}
	e.WaitExplain(api.KindDeployItem, "app-web", "(next try in ")
	e.kc.Restart()
	d = e.WaitItem("app-web", "succeeded", succeeded)
	if d.Status.LastError != nil {
		t.Fatalf("lastError %+v after success", d.Status.LastError)
	}
	if r := providerStatus(t, d).Release; r.Revision != 1 || r.Status != "deployed" {
		t.Fatalf("release %+v: want revision 1 deployed", r)
	}
	raw, _ := json.Marshal(d.Status)
	if !strings.Contains(string(raw), `"uid"`) {
		t.Fatalf("status %s: managedResources without uids", raw)
	}
}

// TestHelm_DeletionWhoseClusterIsGoneNamesTheWayOut: the uninstall of a
// release whose cluster no longer answers is retried, saying that
// cairn.dev/delete-without-uninstall is the way out; with it, the item
// goes.
func TestHelm_DeletionWhoseClusterIsGoneNamesTheWayOut(t *testing.T) {
	e := startCluster(t, nil)
	e.Execution("app", []api.DeployItemTemplate{item("web", map[string]any{"chart": inline(pack(t, "demo", demoChart("0.1.0")))})})
	e.WaitItem("app-web", "succeeded", succeeded)
	e.kc.Stop()
	e.Delete(api.KindExecution, "app")
	d := e.WaitItem("app-web", "saying how to delete it without its cluster", func(d api.DeployItem) bool {
		return d.Status.LastError != nil && d.Status.LastError.Reason == api.ReasonClusterUnreachable
	})
	if le := d.Status.LastError; !strings.Contains(le.Message, api.AnnotationDeleteWithoutUninstall+`: "true"`) {
		t.Fatalf("lastError %+v: want the way out, %s", le, api.AnnotationDeleteWithoutUninstall)
	}
	e.Patch(api.KindDeployItem, "app-web", `{"metadata":{"annotations":{"`+api.AnnotationDeleteWithoutUninstall+`":"true"}}}`)
	e.WaitGone(api.KindDeployItem, "app-web")
}

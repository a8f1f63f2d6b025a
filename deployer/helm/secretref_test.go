package helm_test

import (
	"encoding/json"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
)

// TestHelm_SecretReferencesResolveOnlyIntoTheReleasesValues: a value
// referencing a cairn Secret's key reaches the release (its ConfigMap
// holds the value), while the item's status, its exports fromValues, the
// logs and the trace carry the reference only.
func TestHelm_SecretReferencesResolveOnlyIntoTheReleasesValues(t *testing.T) {
	e := start(t, nil)
	const value = "s3cr3t-pa55w0rd"
	e.Create(testkit.Secret(deploytest.NS, "db", map[string]string{"password": value}))
	ref := api.SecretReference{Name: "db", Key: "password", Version: "5"}.String()
	cfg := map[string]any{"chart": inline(pack(t, "demo", demoChart("0.1.0"))),
		"values":  map[string]any{"greeting": "pg://app:" + ref + "@db"},
		"exports": []any{map[string]any{"key": "greeting", "fromValues": "{.greeting}"}}}
	e.Execution("app", []api.DeployItemTemplate{item("web", cfg)})
	d := e.WaitItem("app-web", "succeeded", succeeded)
	cm, err := e.configMap("default", "web-cm")
	if err != nil || cm.Data["greeting"] != "pg://app:"+value+"@db" {
		t.Fatalf("the release's ConfigMap: %v %v, want the value inside the greeting", cm, err)
	}
	if got := e.Data(d.Status.ExportRef)["greeting"]; got != "pg://app:"+ref+"@db" {
		t.Fatalf("export greeting %q, want the reference", got)
	}
	raw, _ := json.Marshal(d)
	for what, s := range map[string]string{"item": string(raw), "log": e.log.String(),
		"trace": e.Explain(api.KindDeployItem, "app-web") + e.Explain(api.KindExecution, "app")} {
		if strings.Contains(s, value) {
			t.Fatalf("the Secret's value appears in the %s:\n%s", what, s)
		}
	}
}

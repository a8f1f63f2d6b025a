package kubecompat_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKubectl_ReadmeTour runs the README's kubectl tour as written, on a
// whole cairn server (its garbage collector deletes the namespace's
// objects), and checks what each command did.
func TestKubectl_ReadmeTour(t *testing.T) {
	c := startDaemon(t)
	secret := func() map[string]any { return get(t, c, "secrets", "demo", "db-credentials").Object }

	if out := c.must(t, "api-resources"); !row(out, "installations", "inst", "cairn.dev/v1alpha1", "true", "Installation") {
		t.Errorf("api-resources:\n%s", out)
	}
	c.must(t, "apply", "-f", examplePath("namespace.yaml"), "-f", examplePath("secret.yaml"))
	if out := c.must(t, "get", "secrets", "-n", "demo", "-o", "wide"); !row(out, "db-credentials", "Opaque", "2") {
		t.Errorf("get -o wide:\n%s", out)
	}
	// The watch runs beside the next commands, as in a second terminal.
	watched, watchDone := c.start(t, "get", "secrets", "-n", "demo", "-w", "--request-timeout=10s")
	eventually(t, 5*time.Second, func() string {
		if !row(watched.String(), "db-credentials", "Opaque", "2") {
			return "get -w printed nothing yet"
		}
		return ""
	})

	c.must(t, "label", "secret", "db-credentials", "-n", "demo", "tier=db")
	c.must(t, "patch", "secret", "db-credentials", "-n", "demo", "--type", "merge", "-p", `{"metadata":{"annotations":{"owner":"me"}}}`)
	editor := filepath.Join(t.TempDir(), "editor.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/tier: db/tier: cache/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBE_EDITOR", editor)
	c.must(t, "edit", "secret", "db-credentials", "-n", "demo")
	s := get(t, c, "secrets", "demo", "db-credentials")
	if s.GetLabels()["tier"] != "cache" || s.GetAnnotations()["owner"] != "me" {
		t.Errorf("after label, patch and edit: labels %v, annotations %v", s.GetLabels(), s.GetAnnotations())
	}
	// The watch ends at its request timeout.
	if w := <-watchDone; strings.Count(w.out, "db-credentials") != 4 {
		t.Errorf("get -w, want the secret and its three changes:\n%s", w)
	}

	rv := s.GetResourceVersion()
	if r := c.kubectl(t, "diff", "-f", examplePath("secret.yaml")); r.code > 1 {
		t.Errorf("diff: %s", r)
	}
	if got := get(t, c, "secrets", "demo", "db-credentials"); got.GetResourceVersion() != rv {
		t.Errorf("diff wrote the secret: %v", got.Object)
	}
	if out := c.must(t, "apply", "--server-side", "-f", examplePath("secret.yaml")); !strings.Contains(out, "serverside-applied") {
		t.Errorf("apply --server-side: %q", out)
	}
	if _, ok := secret()["data"].(map[string]any)["password"]; !ok {
		t.Errorf("the secret lost its values: %v", secret())
	}
	if out := c.must(t, "explain", "installation.spec.imports"); !strings.Contains(out, "FIELD: imports") {
		t.Errorf("explain:\n%s", out)
	}
	if out := c.must(t, "delete", "namespace", "demo", "--cascade=foreground", "--timeout=30s"); !strings.Contains(out, `namespace.cairn.dev "demo" deleted`) {
		t.Errorf("delete namespace: %q", out)
	}
	if get(t, c, "namespaces", "", "demo") != nil || get(t, c, "secrets", "demo", "db-credentials") != nil {
		t.Error("the namespace or its secret outlived the foreground deletion")
	}
}

package kubecompat_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"cairn.dev/cairn/kinds"
)

// The kubectl tour: what a user of kubectl does first, run with kubectl's
// own command code against a real server.

// row reports whether out has a line whose whitespace-separated cells
// start with cells.
func row(out string, cells ...string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(cells) && slices.Equal(f[:len(cells)], cells) {
			return true
		}
	}
	return false
}

// get reads an object with the dynamic client ("" namespace for a
// cluster-scoped kind); nil when it is not there.
func get(t *testing.T, c *cluster, resource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	o, err := c.dynamic(t).Resource(gvr(resource)).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return o
}

func TestKubectl_APIResourcesListsEveryKind(t *testing.T) {
	c := startServer(t)
	out := c.must(t, "", "api-resources", "--api-group=cairn.dev")
	for _, k := range kinds.All(kinds.Deps{}) {
		cells := []string{k.Plural}
		cells = append(cells, k.ShortNames...)
		cells = append(cells, "cairn.dev/v1alpha1", map[bool]string{true: "true", false: "false"}[k.Namespaced], k.Kind)
		if !row(out, cells...) {
			t.Errorf("api-resources has no row %v:\n%s", cells, out)
		}
	}
	if out := c.must(t, "", "api-resources", "--categories=all", "-o", "name"); !strings.Contains(out, "installations.cairn.dev") || strings.Contains(out, "secrets") {
		t.Errorf("api-resources --categories=all:\n%s", out)
	}
}

func TestKubectl_ApplyExamplesThenGetShowsTheKindsColumns(t *testing.T) {
	c := startServer(t)
	out := c.must(t, "", "apply", "-f", examplePath("namespace.yaml"), "-f", examplePath("secret.yaml"))
	for _, want := range []string{"namespace.cairn.dev/demo created", "secret.cairn.dev/db-credentials created"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply: %q lacks %q", out, want)
		}
	}
	c.must(t, "", "apply", "-f", examplePath("demo.yaml"), "-f", examplePath("lease.yaml"))
	// Applied again, nothing changes. kubectl calls the Secrets
	// "configured": their values stay out of the last-applied annotation
	// it compares, but the server has nothing to write.
	before := get(t, c, "secrets", "demo", "webhook").GetResourceVersion()
	out = c.must(t, "", "apply", "-f", examplePath("demo.yaml"), "-f", examplePath("lease.yaml"))
	for _, want := range []string{"namespace.cairn.dev/demo unchanged", "lease.cairn.dev/report-generator unchanged", "secret.cairn.dev/webhook configured"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply again: %q lacks %q", out, want)
		}
	}
	if after := get(t, c, "secrets", "demo", "webhook").GetResourceVersion(); after != before {
		t.Errorf("apply again wrote the secret: resourceVersion %s → %s", before, after)
	}

	out = c.must(t, "", "get", "secrets", "-n", "demo", "-o", "wide")
	if !row(out, "NAME", "TYPE", "DATA", "AGE") || !row(out, "db-credentials", "Opaque", "2") ||
		!row(out, "registry-pull", "Opaque", "1") || !row(out, "webhook", "Opaque", "1") {
		t.Errorf("get secrets -o wide:\n%s", out)
	}
	// A wide column appears with -o wide only.
	if out := c.must(t, "", "get", "leases"); !row(out, "NAME", "HOLDER", "RENEWED", "AGE") || strings.Contains(out, "TRANSITIONS") {
		t.Errorf("get leases:\n%s", out)
	}
	if out := c.must(t, "", "get", "leases", "report-generator", "-o", "wide"); !row(out, "NAME", "HOLDER", "RENEWED", "TRANSITIONS", "AGE") ||
		!row(out, "report-generator", "http://worker-1.example:8080") {
		t.Errorf("get leases -o wide:\n%s", out)
	}
	// Label selectors select.
	if out := c.must(t, "", "get", "secrets", "-A", "-l", "app=preview", "-o", "name"); strings.Count(out, "\n") != 3 {
		t.Errorf("get -l app=preview: %q, want 3 secrets", out)
	}
	// The secret's values never reach the last-applied annotation.
	s := get(t, c, "secrets", "demo", "db-credentials")
	if strings.Contains(s.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"], "change-me") {
		t.Errorf("last-applied holds the secret's value: %v", s.GetAnnotations())
	}
}

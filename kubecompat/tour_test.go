package kubecompat_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

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
	out := c.must(t, "api-resources", "--api-group=cairn.dev")
	for _, k := range kinds.All(kinds.Deps{}) {
		cells := []string{k.Plural}
		cells = append(cells, k.ShortNames...)
		cells = append(cells, "cairn.dev/v1alpha1", map[bool]string{true: "true", false: "false"}[k.Namespaced], k.Kind)
		if !row(out, cells...) {
			t.Errorf("api-resources has no row %v:\n%s", cells, out)
		}
	}
	if out := c.must(t, "api-resources", "--categories=all", "-o", "name"); !strings.Contains(out, "installations.cairn.dev") || strings.Contains(out, "secrets") {
		t.Errorf("api-resources --categories=all:\n%s", out)
	}
}

func TestKubectl_ApplyExamplesThenGetShowsTheKindsColumns(t *testing.T) {
	c := startServer(t)
	out := c.must(t, "apply", "-f", examplePath("namespace.yaml"), "-f", examplePath("secret.yaml"))
	for _, want := range []string{"namespace.cairn.dev/demo created", "secret.cairn.dev/db-credentials created"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply: %q lacks %q", out, want)
		}
	}
	c.must(t, "apply", "-f", examplePath("demo.yaml"), "-f", examplePath("lease.yaml"))
	// Applied again, nothing changes. kubectl calls the Secrets
	// "configured": their values stay out of the last-applied annotation
	// it compares, but the server has nothing to write.
	before := get(t, c, "secrets", "demo", "webhook").GetResourceVersion()
	out = c.must(t, "apply", "-f", examplePath("demo.yaml"), "-f", examplePath("lease.yaml"))
	for _, want := range []string{"namespace.cairn.dev/demo unchanged", "lease.cairn.dev/report-generator unchanged", "secret.cairn.dev/webhook configured"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply again: %q lacks %q", out, want)
		}
	}
	if after := get(t, c, "secrets", "demo", "webhook").GetResourceVersion(); after != before {
		t.Errorf("apply again wrote the secret: resourceVersion %s → %s", before, after)
	}

	out = c.must(t, "get", "secrets", "-n", "demo", "-o", "wide")
	if !row(out, "NAME", "TYPE", "DATA", "AGE") || !row(out, "db-credentials", "Opaque", "2") ||
		!row(out, "registry-pull", "Opaque", "1") || !row(out, "webhook", "Opaque", "1") {
		t.Errorf("get secrets -o wide:\n%s", out)
	}
	// A wide column appears with -o wide only.
	if out := c.must(t, "get", "leases"); !row(out, "NAME", "HOLDER", "RENEWED", "AGE") || strings.Contains(out, "TRANSITIONS") {
		t.Errorf("get leases:\n%s", out)
	}
	if out := c.must(t, "get", "leases", "report-generator", "-o", "wide"); !row(out, "NAME", "HOLDER", "RENEWED", "TRANSITIONS", "AGE") ||
		!row(out, "report-generator", "http://worker-1.example:8080") {
		t.Errorf("get leases -o wide:\n%s", out)
	}
	// Label selectors select.
	if out := c.must(t, "get", "secrets", "-A", "-l", "app=preview", "-o", "name"); strings.Count(out, "\n") != 3 {
		t.Errorf("get -l app=preview: %q, want 3 secrets", out)
	}
	// The secret's values never reach the last-applied annotation.
	s := get(t, c, "secrets", "demo", "db-credentials")
	if strings.Contains(s.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"], "change-me") {
		t.Errorf("last-applied holds the secret's value: %v", s.GetAnnotations())
	}
}

// TestKubectl_ApplyEveryExample applies every manifest under examples/
// (kubectl's validation, then the server's, for every kind in them), then
// again: the second apply writes nothing. A Helm chart's sources
// (examples/kubernetes/hello) are not cairn objects and are left out.
func TestKubectl_ApplyEveryExample(t *testing.T) {
	c := startServer(t)
	versions := func() string {
		// The category "cairn" holds every kind.
		return c.must(t, "get", "cairn", "-A", "-o", `jsonpath={range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}`)
	}
	args := append([]string{"apply"}, exampleFiles(t, filepath.Join("..", "examples"))...)
	out := c.must(t, args...)
	before := versions()
	if n := strings.Count(out, " created\n"); n < 15 || n != strings.Count(before, "\n")-1 { // -1: namespace default
		t.Errorf("apply created %d objects, the server has %d:\n%s\n%s", n, strings.Count(before, "\n"), out, before)
	}
	c.must(t, args...)
	if after := versions(); after != before {
		t.Errorf("applying the examples again wrote:\n%s\nthen\n%s", before, after)
	}
}

// secretYAML is a Secret in namespace demo with one value and labels.
func secretYAML(name, value string, labels ...string) string {
	y := "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata:\n  name: " + name + "\n  namespace: demo\n"
	if len(labels) > 0 {
		y += "  labels:\n"
		for i := 0; i+1 < len(labels); i += 2 {
			y += "    " + labels[i] + ": " + labels[i+1] + "\n"
		}
	}
	return y + "stringData:\n  value: " + value + "\n"
}

// demoNamespace creates namespace demo and a Secret db-credentials in it.
func demoNamespace(t *testing.T, c *cluster) {
	t.Helper()
	c.must(t, "apply", "-f", examplePath("namespace.yaml"), "-f", examplePath("secret.yaml"))
}

func TestKubectl_GetWatchPrintsTheChangesOfWhatItWatches(t *testing.T) {
	c := startServer(t)
	demoNamespace(t, c)
	all, allDone := c.start(t, "get", "secrets", "-n", "demo", "-w", "--output-watch-events", "--request-timeout=10s")
	one, oneDone := c.start(t, "get", "secret", "db-credentials", "-n", "demo", "-w", "--output-watch-events", "--request-timeout=10s")
	eventually(t, 10*time.Second, func() string {
		if !row(all.String(), "ADDED", "db-credentials") {
			return "get -w printed no initial row: " + all.String()
		}
		if !row(one.String(), "ADDED", "db-credentials") {
			return "get -w of one object printed no initial row: " + one.String()
		}
		// A watch of one object starts at its current state: the
		// changes below must come after.
		if n := openWatches(t, c); n != 2 {
			return fmt.Sprintf("%v watches open, want 2", n)
		}
		return ""
	})
	c.must(t, "apply", "-f", file(t, secretYAML("other", "x")))
	c.must(t, "label", "secret", "other", "-n", "demo", "stage=1")
	c.must(t, "label", "secret", "db-credentials", "-n", "demo", "stage=1")
	c.must(t, "delete", "secret", "other", "-n", "demo")
	ra, ro := <-allDone, <-oneDone
	t.Logf("all:\n%s\none:\n%s", ra, ro)
	for _, want := range [][]string{{"ADDED", "other"}, {"MODIFIED", "other"}, {"MODIFIED", "db-credentials"}, {"DELETED", "other"}} {
		if !row(ra.out, want...) {
			t.Errorf("get secrets -w has no row %v:\n%s", want, ra.out)
		}
	}
	if !row(ro.out, "MODIFIED", "db-credentials") || strings.Contains(ro.out, "other") {
		t.Errorf("get secret db-credentials -w, want its change only:\n%s", ro.out)
	}
}

// openWatches is the number of watches the test server has open.
func openWatches(t *testing.T, c *cluster) float64 {
	t.Helper()
	families, err := c.srv.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, f := range families {
		if f.GetName() == "cairn_watches" {
			for _, m := range f.GetMetric() {
				n += m.GetGauge().GetValue()
			}
		}
	}
	return n
}

// leaseYAML is a Lease (cluster-scoped) held by holder.
func leaseYAML(name, holder string) string {
	return "apiVersion: cairn.dev/v1alpha1\nkind: Lease\nmetadata:\n  name: " + name +
		"\nspec:\n  holderIdentity: " + holder + "\n  leaseDurationSeconds: 15\n"
}

// holder is a Lease's spec.holderIdentity as the server has it.
func holder(t *testing.T, c *cluster, name string) string {
	t.Helper()
	l := get(t, c, "leases", "", name)
	if l == nil {
		t.Fatalf("lease %s is not there", name)
	}
	h, _, _ := unstructured.NestedString(l.Object, "spec", "holderIdentity")
	return h
}

func TestKubectl_EditWritesWhatTheEditorChanged(t *testing.T) {
	c := startServer(t)
	c.must(t, "apply", "-f", examplePath("lease.yaml"))
	dir := t.TempDir()
	script := filepath.Join(dir, "editor.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nsed -i 's/worker-1/worker-2/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBE_EDITOR", script)
	if out := c.must(t, "edit", "lease", "report-generator"); !strings.Contains(out, "lease.cairn.dev/report-generator edited") {
		t.Errorf("edit: %q", out)
	}
	if h := holder(t, c, "report-generator"); h != "http://worker-2.example:8080" {
		t.Errorf("after edit the holder is %q", h)
	}

	// An edit the server refuses is not written: kubectl reopens the
	// editor with the server's causes in comments and, when nothing more
	// changes, keeps that file.
	bad := filepath.Join(dir, "bad.sh")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\nsed -i 's/leaseDurationSeconds: 15/leaseDurationSeconds: 0/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBE_EDITOR", bad)
	r := c.kubectl(t, "edit", "lease", "report-generator")
	kept := regexp.MustCompile(`stored to "([^"]+)"`).FindStringSubmatch(r.err)
	if r.code == 0 || kept == nil || !strings.Contains(r.err, `"report-generator" is invalid`) {
		t.Fatalf("an invalid edit: %s", r)
	}
	t.Cleanup(func() { _ = os.Remove(kept[1]) })
	if raw, err := os.ReadFile(kept[1]); err != nil || !strings.Contains(string(raw), "# * spec.leaseDurationSeconds: Invalid value: 0: must be at least 1") {
		t.Errorf("the kept edit does not give the server's cause: %v\n%s", err, raw)
	}
	l := get(t, c, "leases", "", "report-generator")
	if d, _, _ := unstructured.NestedInt64(l.Object, "spec", "leaseDurationSeconds"); d != 15 {
		t.Errorf("the invalid edit was written: leaseDurationSeconds %d", d)
	}
}

func TestKubectl_PatchAppliesMergeAndJSONPatches(t *testing.T) {
	c := startServer(t)
	c.must(t, "apply", "-f", file(t, leaseYAML("l", "a")))
	tests := []struct {
		name       string
		args       []string
		wantHolder string
		wantErr    string // "" for success
	}{
		{"merge", []string{"--type=merge", "-p", `{"spec":{"holderIdentity":"b"}}`}, "b", ""},
		{"json", []string{"--type=json", "-p", `[{"op":"replace","path":"/spec/holderIdentity","value":"c"}]`}, "c", ""},
		{"json test that fails", []string{"--type=json", "-p", `[{"op":"test","path":"/spec/holderIdentity","value":"x"},{"op":"replace","path":"/spec/holderIdentity","value":"d"}]`}, "c", "test"},
		{"invalid result", []string{"--type=merge", "-p", `{"spec":{"leaseDurationSeconds":0}}`}, "c", "spec.leaseDurationSeconds"},
		// As for Kubernetes custom resources: no strategic merge patch.
		{"strategic", []string{"-p", `{"spec":{"holderIdentity":"e"}}`}, "c", "merge-patch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.kubectl(t, append([]string{"patch", "lease", "l"}, tt.args...)...)
			switch {
			case tt.wantErr == "" && r.code != 0:
				t.Errorf("patch: %s", r)
			case tt.wantErr != "" && (r.code == 0 || !strings.Contains(r.err, tt.wantErr)):
				t.Errorf("patch: %s\nwant an error with %q", r, tt.wantErr)
			}
			if h := holder(t, c, "l"); h != tt.wantHolder {
				t.Errorf("holder %q, want %q", h, tt.wantHolder)
			}
		})
	}
}

func TestKubectl_LabelSetsOverwritesAndRemoves(t *testing.T) {
	c := startServer(t)
	demoNamespace(t, c)
	labels := func() map[string]string { return get(t, c, "secrets", "demo", "db-credentials").GetLabels() }
	c.must(t, "label", "secret", "db-credentials", "-n", "demo", "tier=db")
	if l := labels(); l["tier"] != "db" || l["app"] != "preview" {
		t.Errorf("labels %v", l)
	}
	if r := c.kubectl(t, "label", "secret", "db-credentials", "-n", "demo", "tier=cache"); r.code == 0 || !strings.Contains(r.err, "already has a value") {
		t.Errorf("relabel without --overwrite: %s", r)
	}
	c.must(t, "label", "secret", "db-credentials", "-n", "demo", "tier=cache", "--overwrite")
	if l := labels(); l["tier"] != "cache" {
		t.Errorf("labels %v after --overwrite", l)
	}
	if out := c.must(t, "get", "secrets", "-n", "demo", "-l", "tier=cache", "-o", "name"); out != "secret.cairn.dev/db-credentials\n" {
		t.Errorf("get -l tier=cache: %q", out)
	}
	c.must(t, "label", "secret", "db-credentials", "-n", "demo", "tier-")
	if l := labels(); len(l) != 1 || l["app"] != "preview" {
		t.Errorf("labels %v after tier-", l)
	}
	if out := c.must(t, "get", "secrets", "-n", "demo", "-l", "tier=cache", "-o", "name"); out != "" {
		t.Errorf("get -l tier=cache after removing it: %q", out)
	}
}

func TestKubectl_ExplainDescribesTheKindsFields(t *testing.T) {
	c := startServer(t)
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"secrets"}, []string{"KIND:       Secret", "GROUP:      cairn.dev", "VERSION:    v1alpha1", "stringData\t<map[string]string>"}},
		{[]string{"installations.spec"}, []string{"KIND:       Installation", "FIELD: spec", "imports"}},
		{[]string{"leases", "--recursive"}, []string{"holderIdentity", "leaseDurationSeconds"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out := c.must(t, append([]string{"explain"}, tt.args...)...)
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("explain %v lacks %q:\n%s", tt.args, w, out)
				}
			}
		})
	}
}

func TestKubectl_GetFieldSelectorSelects(t *testing.T) {
	c := startServer(t)
	c.must(t, "apply", "-f", examplePath("demo.yaml"), "-f", examplePath("secret.yaml"), "-f", examplePath("team.yaml"))
	tests := []struct {
		args    []string
		want    string
		wantErr string
	}{
		{[]string{"-n", "demo", "--field-selector", "metadata.name=webhook"}, "secret.cairn.dev/webhook\n", ""},
		{[]string{"-n", "demo", "--field-selector", "metadata.name!=webhook"}, "secret.cairn.dev/db-credentials\nsecret.cairn.dev/registry-pull\n", ""},
		{[]string{"-A", "--field-selector", "metadata.namespace=team-a"}, "secret.cairn.dev/api-key\n", ""},
		{[]string{"-A", "--field-selector", "metadata.namespace=demo,metadata.name=webhook"}, "secret.cairn.dev/webhook\n", ""},
		{[]string{"-A", "--field-selector", "metadata.name=nothing"}, "", ""},
		{[]string{"-A", "--field-selector", "type=Opaque"}, "", "type"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := c.kubectl(t, append([]string{"get", "secrets", "-o", "name"}, tt.args...)...)
			switch {
			case tt.wantErr != "":
				if r.code == 0 || !strings.Contains(r.err, tt.wantErr) {
					t.Errorf("%s\nwant an error naming %q", r, tt.wantErr)
				}
			case r.code != 0 || r.out != tt.want:
				t.Errorf("%s\nwant %q", r, tt.want)
			}
		})
	}
}

// exampleFiles returns "-f FILE" for every YAML file under dir, in
// lexical order, but for the files of Helm charts (directories holding a
// Chart.yaml).
func exampleFiles(t *testing.T, dir string) []string {
	t.Helper()
	var args []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			if _, err := os.Stat(filepath.Join(path, "Chart.yaml")); err == nil {
				return filepath.SkipDir
			}
		case strings.HasSuffix(path, ".yaml"):
			args = append(args, "-f", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return args
}

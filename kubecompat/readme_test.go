package kubecompat_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
)

// cairnTourSections are the README sections whose `./cairn` commands
// TestCairn_ReadmeTour runs, in order. The kubectl tour is
// TestKubectl_ReadmeTour's; the preview story and the events tour need
// the example workers' curl (cli/event/story_test.go plays the story); the
// Kubernetes, several-servers and workers-on-Kubernetes sections need a
// cluster or other machines.
var cairnTourSections = []string{
	"A tour",
	"Tour: a tree of installations",
	"Tour: executions, deploy items and deployers",
	"Tour: cleaning up a preview environment",
	"Why is it stuck?",
}

// TestCairn_ReadmeTour runs the README's `./cairn` commands top to bottom,
// as extracted from the README itself, on a whole server from a fresh
// HOME: each must succeed. A watch (-w) runs for a few seconds beside the
// next commands, as in a second terminal; the tour waits for what must go
// with `cairn wait --for delete`.
func TestCairn_ReadmeTour(t *testing.T) {
	cmds, err := readmeCommands("../README.md", "./cairn ", cairnTourSections)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", t.TempDir())
	t.Chdir("..") // the README's paths are the repository's
	d, c := clitest.StartDaemon(t, daemon.Options{Controllers: controllers.List(controllers.Config{}), LeaderTTL: time.Second})
	var watches []<-chan clitest.Result
	for _, c := range cmds {
		if slices.Contains(c.args, "-w") {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			done := make(chan clitest.Result, 1)
			go func() {
				defer cancel()
				done <- clitest.RunContext(ctx, t, d.ClientConfig(), clitest.Cmd{Args: c.args}, nil)
			}()
			watches = append(watches, done)
			continue
		}
		res := clitest.RunContext(context.Background(), t, d.ClientConfig(), clitest.Cmd{Args: c.args, Stdin: c.stdin}, nil)
		if res.Error != nil {
			t.Fatalf("README line %q: %v\n%s%s", c.line, res.Error, res.Out, res.Err)
		}
		t.Logf("%s\n%s", c.line, res.Out)
	}
	// The Cleaner example was finished in the tour.
	for _, ref := range [][2]string{{"Cleaner", "preview-42"}, {"Installation", "preview-42"}, {"DataObject", "pr-42"}, {"Secret", "preview-42-env"}} {
		if _, err := c.Get(context.Background(), ref[0], "previews", ref[1]); !errors.Is(err, api.ErrNotFound) {
			t.Errorf("after the tour, %s previews/%s: %v, want it deleted by the Cleaner", ref[0], ref[1], err)
		}
	}
	for _, w := range watches {
		if res := <-w; res.Error != nil && !errors.Is(res.Error, context.DeadlineExceeded) && !strings.Contains(res.Error.Error(), "context deadline") {
			t.Errorf("a watch of the README ended with %v\n%s", res.Error, res.Err)
		}
	}
}

// TestReadme_CurlWatchPrintsEventsAsTheyCome: curl buffers its output
// unless told not to; the README's watch uses -N.
func TestReadme_CurlWatchPrintsEventsAsTheyCome(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	for i, l := range lines {
		if strings.Contains(l, "watch=true") && i > 0 && strings.HasPrefix(lines[i-1], "curl") && !strings.Contains(lines[i-1], " -N ") {
			t.Errorf("README line %d: the watch's curl lacks -N: %s", i, lines[i-1])
		}
	}
}

// TestKubectl_ReadmeTour runs the README's kubectl tour as written, on a
// whole cairn server (its garbage collector deletes the namespace's
// objects), and checks what each command did.
func TestKubectl_ReadmeTour(t *testing.T) {
	// The commands below are the README's, in its order (the README's
	// watch and edit need a terminal: the test gives them a timeout and
	// an editor).
	cmds, err := readmeCommands("../README.md", "kubectl ", []string{"Tour: kubectl"})
	if err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, c := range cmds {
		verbs = append(verbs, c.args[0])
	}
	if want := "api-resources apply get get label patch edit diff apply explain delete"; strings.Join(verbs, " ") != want {
		t.Fatalf("the README's kubectl tour is %q, this test plays %q: update one or the other", strings.Join(verbs, " "), want)
	}
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

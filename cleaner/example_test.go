package cleaner_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/internal/testkit"
)

// TestExample_PreviewCleanerDeletesThePreviewOnceItsPullRequestCloses
// applies examples/preview/cleaner.yaml with the CLI, then plays the story:
// the Cleaner waits for its TTL (shortened here from a day to none), stays
// Pending while the pull request is open, and deletes the preview's
// Installation, record and Secrets once the record says closed.
func TestExample_PreviewCleanerDeletesThePreviewOnceItsPullRequestCloses(t *testing.T) {
	e := newEnv(t)
	e.start(nil)
	run := func(args ...string) string {
		t.Helper()
		r := clitest.Run(t, e.ts.Config(), args...)
		if r.Error != nil {
			t.Fatalf("cairn %s: %v %s", strings.Join(args, " "), r.Error, r.Err)
		}
		return r.Out
	}
	out := run("apply", "-f", filepath.Join("..", "examples", "preview", "cleaner.yaml"))
	want := "namespace/previews created\nsecret/preview-42-env created\ninstallation/preview-42 created\ndataobject/pr-42 created\ncleaner/preview-42 created\n"
	if out != want {
		t.Fatalf("apply: %q, want %q", out, want)
	}
	const pns = "previews"
	get := func() *api.Cleaner {
		c, err := e.cleaners().Get(context.Background(), pns, "preview-42")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	testkit.Eventually(t, wait, "the cleaner waiting for its TTL", func() bool { return get().Status.Phase == api.CleanerWaiting })
	table := run("get", "cleaners", "-n", pns)
	for _, want := range []string{"PHASE", "TTL", "NEXT-EVALUATION", "TARGETS", "preview-42", "Waiting", "24h0m0s",
		get().CreationTimestamp.Add(24*time.Hour + time.Second - 1).Truncate(time.Second).UTC().Format(time.RFC3339)} {
		if !strings.Contains(table, want) {
			t.Errorf("get cleaners lacks %q:\n%s", want, table)
		}
	}

	// A day later (the TTL shortened): the pull request is still open.
	if _, err := e.c.Patch(context.Background(), api.KindCleaner, pns, "preview-42", []byte(`{"spec":{"ttl":"0s"}}`), false); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, wait, "the cleaner pending on the open pull request", func() bool { return get().Status.Phase == api.CleanerPending })
	explained := run("explain", "cleaner/preview-42", "-n", pns)
	for _, want := range []string{"target pr (DataObject/pr-42, delete true, evaluated true) resolved to DataObject/pr-42",
		"= false", `"preview.cairn.dev/state":"open"`, "(retry.period)"} {
		if !strings.Contains(explained, want) {
			t.Errorf("explain lacks %q:\n%s", want, explained)
		}
	}

	// The pull request closes.
	if _, err := e.c.Patch(context.Background(), api.KindDataObject, pns, "pr-42",
		[]byte(`{"metadata":{"labels":{"preview.cairn.dev/state":"closed"}}}`), false); err != nil {
		t.Fatal(err)
	}
	gone := func(kind, name string) bool {
		o, err := e.c.Get(context.Background(), kind, pns, name)
		return err != nil || o.Deleting()
	}
	testkit.Eventually(t, wait, "the preview deleted", func() bool {
		return gone(api.KindInstallation, "preview-42") && gone(api.KindDataObject, "pr-42") &&
			gone(api.KindSecret, "preview-42-env") && gone(api.KindCleaner, "preview-42")
	})
}

package event_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
)

// TestExample_PreviewStoryFromPushToCleanup plays examples/preview/story.yaml
// on a whole server with every controller: a push event's worker applies
// the preview's Installation, record and Cleaner with its token; the
// Installation's container deploy item runs and it is Succeeded; a
// pull_request_closed event's worker labels the record closed; the Cleaner
// deletes the Installation and the record, then itself, and everything the
// Installation owned goes with it: its Execution and DeployItems (through
// the deletion flows) and the exports' DataObjects (the garbage collector).
func TestExample_PreviewStoryFromPushToCleanup(t *testing.T) {
	d, c := clitest.StartDaemon(t, daemon.Options{Controllers: controllers.List(controllers.Config{}), LeaderTTL: time.Second})
	ctx := context.Background()
	const ns = "previews"
	run := func(args ...string) string {
		t.Helper()
		r := clitest.Run(t, d.ClientConfig(), args...)
		if r.Error != nil {
			t.Fatalf("cairn %s: %v %s", strings.Join(args, " "), r.Error, r.Err)
		}
		return r.Out
	}
	out := run("apply", "-f", filepath.Join("..", "..", "examples", "preview", "story.yaml"))
	if want := "namespace/previews created\nproject/previews created\n"; out != want {
		t.Fatalf("apply: %q, want %q", out, want)
	}

	// event sends one event to the subscribed project, waits until its
	// worker succeeded (failing with the worker's logs otherwise) and
	// answers the worker's logs.
	event := func(typ string) string {
		t.Helper()
		out := run("event", "create", "-n", ns, "--source", "git", "--type", typ, "--label", "pr=42")
		name, ok := strings.CutPrefix(strings.TrimSpace(out), "event/")
		if !ok || !strings.HasSuffix(name, " created") {
			t.Fatalf("event create --type %s: %q, want one event", typ, out)
		}
		name = strings.TrimSuffix(name, " created")
		testkit.Eventually(t, 60*time.Second, "the "+typ+" worker to succeed", func() bool {
			ev, err := client.For[*api.Event](c).Get(ctx, ns, name)
			if err != nil {
				t.Fatal(err)
			}
			if p := ev.Status.Worker.Phase; p.Terminal() && p != api.PhaseSucceeded {
				logs := clitest.Run(t, d.ClientConfig(), "logs", "event/"+name, "-n", ns)
				t.Fatalf("%s worker %s (%s); logs:\n%s", typ, p, ev.Status.Worker.Reason, logs.Out)
			}
			return ev.Status.Worker.Phase == api.PhaseSucceeded
		})
		return run("logs", "event/"+name, "-n", ns)
	}

	if logs := event("push"); !strings.Contains(logs, "installations/preview-42 created") || !strings.Contains(logs, "cleaners/preview-42 created") {
		t.Fatalf("the push worker's logs:\n%s", logs)
	}
	testkit.EventuallyNil(t, 90*time.Second, "installation preview-42 Succeeded", func() error {
		in, err := client.For[*api.Installation](c).Get(ctx, ns, "preview-42")
		if err != nil {
			return err
		}
		if in.Status.Phase != api.InstallationSucceeded {
			return fmt.Errorf("phase %q", in.Status.Phase)
		}
		return nil
	})
	count := func(kind string) int {
		l, err := c.List(ctx, kind, ns, api.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	if count(api.KindExecution) == 0 || count(api.KindDeployItem) == 0 {
		t.Fatalf("the Succeeded installation has %d executions and %d deploy items, want some",
			count(api.KindExecution), count(api.KindDeployItem))
	}
	items, _, err := client.For[*api.DeployItem](c).List(ctx, ns, api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Status.Phase != api.DeploySucceeded {
			t.Errorf("deploy item %s is %q, want Succeeded (its container ran)", it.Name, it.Status.Phase)
		}
	}
	// The container's export reached a DataObject.
	dos, _, err := client.For[*api.DataObject](c).List(ctx, ns, api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	exported := false
	for _, o := range dos {
		exported = exported || strings.Contains(string(o.Data), "http://preview-42.127.0.0.1.nip.io")
	}
	if !exported {
		t.Errorf("no DataObject holds the deploy item's export: %d DataObjects", len(dos))
	}
	// The open pull request keeps its preview once the TTL has passed.
	testkit.Eventually(t, 60*time.Second, "the cleaner pending on the open pull request", func() bool {
		cl, err := client.For[*api.Cleaner](c).Get(ctx, ns, "preview-42")
		if err != nil {
			t.Fatal(err)
		}
		return cl.Status.Phase == api.CleanerPending
	})
	if out := run("explain", "cleaner/preview-42", "-n", ns); !strings.Contains(out, `"preview.cairn.dev/state":"open"`) {
		t.Errorf("explain does not show the open record:\n%s", out)
	}

	// Another push to the pull request replaces the objects: the worker
	// is idempotent.
	if logs := event("push"); !strings.Contains(logs, "dataobjects/pr-42 updated") || !strings.Contains(logs, "installations/preview-42 updated") {
		t.Fatalf("the second push worker's logs:\n%s", logs)
	}
	if logs := event("pull_request_closed"); !strings.Contains(logs, "pull request 42 closed") {
		t.Fatalf("the close worker's logs:\n%s", logs)
	}
	gone := func(kind, name string) bool {
		_, err := c.Get(ctx, kind, ns, name)
		return errors.Is(err, api.ErrNotFound)
	}
	testkit.EventuallyNil(t, 90*time.Second, "the preview and all it owned deleted", func() error {
		var left []string
		for _, o := range []struct{ kind, name string }{{api.KindInstallation, "preview-42"}, {api.KindDataObject, "pr-42"}, {api.KindCleaner, "preview-42"}} {
			if !gone(o.kind, o.name) {
				left = append(left, o.kind+"/"+o.name)
			}
		}
		for _, kind := range []string{api.KindExecution, api.KindDeployItem, api.KindDataObject} { // and the exports' DataObjects
			if n := count(kind); n > 0 {
				left = append(left, fmt.Sprintf("%d %s", n, kind))
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("still there: %s", strings.Join(left, ", "))
		}
		return nil
	})
}

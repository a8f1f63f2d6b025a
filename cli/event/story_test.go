package event_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
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

// The story's fixed values: the example's webhook secret and reporting
// token, the console URL given to the controllers (--console-url), the
// pull request's head commits in GitHub's payloads and after a push.
const (
	storyWebhookSecret = "change-me-to-a-long-random-string"
	storyToken         = "change-me-to-a-github-token"
	storyConsole       = "https://cairn.example.com/ui/"
	headSHA            = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	pushedSHA          = "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c"
)

// TestExample_PreviewStoryFromPullRequestToCleanup plays
// examples/preview/story.yaml on a whole server with every controller,
// fed with GitHub's pull_request deliveries (gateway/testdata), signed, and
// with a local server standing in for GitHub's status API:
//   - labeled preview: the worker applies the preview's Installation,
//     record and Cleaner; the Installation's container deploy item runs and
//     it is Succeeded; the Cleaner keeps the open pull request's preview;
//   - synchronize (a push): the worker re-applies the preview at the new
//     head commit;
//   - closed: the worker labels the record closed; the Cleaner deletes the
//     Installation and the record, then itself, and everything the
//     Installation owned goes with it;
//
// and each worker's phases reach GitHub as exactly the commit statuses on
// the delivery's head commit, linking to the event's page under
// --console-url.
func TestExample_PreviewStoryFromPullRequestToCleanup(t *testing.T) {
	gh := newFakeGitHub(t)
	d, c := clitest.StartDaemon(t, daemon.Options{Controllers: controllers.List(controllers.Config{ConsoleURL: storyConsole}), LeaderTTL: time.Second})
	gh.check(t, playPreviewStory(t, d, c, gh))
}

// playPreviewStory plays examples/preview/story.yaml on d (whose
// controllers take --console-url storyConsole) with gh as GitHub's status
// API, and asserts each step (see TestExample_PreviewStoryFromPullRequestToCleanup)
// but the statuses GitHub saw: it returns the events whose worker
// succeeded, with their commits, for the caller to check them.
func playPreviewStory(t *testing.T, d *daemon.Daemon, c client.Interface, gh *fakeGitHub) []wantStatus {
	t.Helper()
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
	if want := "namespace/previews created\nsecret/github-webhook created\nsecret/github-token created\ngateway/github created\n" +
		"cleaner/at-most-10-previews created\nproject/previews created\n"; out != want {
		t.Fatalf("apply: %q, want %q", out, want)
	}
	// GitHub's API is the local stand-in.
	gw, err := client.For[*api.Gateway](c).Get(ctx, ns, "github")
	if err != nil {
		t.Fatal(err)
	}
	gw.Spec.Report.APIURL = gh.URL
	if _, err := client.For[*api.Gateway](c).Update(ctx, gw); err != nil {
		t.Fatal(err)
	}

	hc := testkit.HTTPClient(t, d.ClientConfig())
	webhook := d.URL() + api.BasePath + "/namespaces/" + ns + "/gateways/github/webhook"
	// pullRequest delivers body as GitHub would, waits until the event's
	// worker succeeded (failing with its logs otherwise) and until GitHub
	// was told so, and answers the event's name and the worker's logs.
	pullRequest := func(delivery string, body []byte) (string, string) {
		t.Helper()
		res := deliver(t, hc, webhook, delivery, body)
		if res.Outcome != "created" || len(res.Events) != 1 {
			t.Fatalf("delivery %s: %+v, want one event created", delivery, res)
		}
		name := res.Events[0]
		testkit.Eventually(t, 60*time.Second, "the worker of "+delivery+" to succeed", func() bool {
			ev, err := client.For[*api.Event](c).Get(ctx, ns, name)
			if err != nil {
				t.Fatal(err)
			}
			if p := ev.Status.Worker.Phase; p.Terminal() && p != api.PhaseSucceeded {
				logs := clitest.Run(t, d.ClientConfig(), "logs", "event/"+name, "-n", ns)
				t.Fatalf("%s worker %s (%s); logs:\n%s", delivery, p, ev.Status.Worker.Reason, logs.Out)
			}
			return ev.Status.Worker.Phase == api.PhaseSucceeded
		})
		gh.waitSuccess(t, name)
		return name, run("logs", "event/"+name, "-n", ns)
	}

	labeled, logs := pullRequest("delivery-labeled", storyPayload(t, "pull_request_labeled.json"))
	if !strings.Contains(logs, "installations/preview-2 created") || !strings.Contains(logs, "cleaners/preview-2 created") {
		t.Fatalf("the labeled worker's logs:\n%s", logs)
	}
	checkPreviewUp(t, ctx, c, ns)
	// The open pull request keeps its preview.
	testkit.Eventually(t, 60*time.Second, "the cleaner pending on the open pull request", func() bool {
		cl, err := client.For[*api.Cleaner](c).Get(ctx, ns, "preview-2")
		if err != nil {
			t.Fatal(err)
		}
		return cl.Status.Phase == api.CleanerPending
	})
	if out := run("explain", "cleaner/preview-2", "-n", ns); !strings.Contains(out, `"preview.cairn.dev/state":"open"`) {
		t.Errorf("explain does not show the open record:\n%s", out)
	}

	// A push: the preview follows the new head commit.
	push := bytes.ReplaceAll(storyPayload(t, "pull_request_synchronize.json"), []byte(headSHA), []byte(pushedSHA))
	pushed, logs := pullRequest("delivery-push", push)
	if !strings.Contains(logs, "its preview follows "+pushedSHA) || !strings.Contains(logs, "installations/preview-2 updated") {
		t.Fatalf("the push worker's logs:\n%s", logs)
	}
	in, err := client.For[*api.Installation](c).Get(ctx, ns, "preview-2")
	if err != nil {
		t.Fatal(err)
	}
	if got := in.Annotations["preview.cairn.dev/sha"]; got != pushedSHA {
		t.Errorf("the preview's commit after the push: %q, want %q", got, pushedSHA)
	}
	// GitHub's retry of the same delivery makes nothing.
	if res := deliver(t, hc, webhook, "delivery-push", push); res.Outcome != "repeated" || len(res.Events) != 0 {
		t.Errorf("the push delivered again: %+v, want repeated and no event", res)
	}

	closed, logs := pullRequest("delivery-closed", storyPayload(t, "pull_request_closed.json"))
	if !strings.Contains(logs, "pull request 2 closed") {
		t.Fatalf("the close worker's logs:\n%s", logs)
	}
	checkPreviewGone(t, ctx, c, ns)
	if _, err := client.For[*api.Cleaner](c).Get(ctx, ns, "at-most-10-previews"); err != nil {
		t.Errorf("the standing capacity rule: %v, want it kept", err)
	}

	return []wantStatus{{labeled, headSHA}, {pushed, pushedSHA}, {closed, headSHA}}
}

// checkPreviewUp waits until the Installation preview-2 is Succeeded and
// checks its deploy items ran and their export reached a DataObject.
func checkPreviewUp(t *testing.T, ctx context.Context, c client.Interface, ns string) {
	t.Helper()
	testkit.EventuallyNil(t, 90*time.Second, "installation preview-2 Succeeded", func() error {
		in, err := client.For[*api.Installation](c).Get(ctx, ns, "preview-2")
		if err != nil {
			return err
		}
		if in.Status.Phase != api.InstallationSucceeded {
			return fmt.Errorf("phase %q", in.Status.Phase)
		}
		return nil
	})
	items, _, err := client.For[*api.DeployItem](c).List(ctx, ns, api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) == 0 {
		t.Fatal("the Succeeded installation has no deploy items")
	}
	for _, it := range items {
		if it.Status.Phase != api.DeploySucceeded {
			t.Errorf("deploy item %s is %q, want Succeeded (its container ran)", it.Name, it.Status.Phase)
		}
	}
	dos, _, err := client.For[*api.DataObject](c).List(ctx, ns, api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	exported := false
	for _, o := range dos {
		exported = exported || strings.Contains(string(o.Data), "http://preview-2.127.0.0.1.nip.io")
	}
	if !exported {
		t.Errorf("no DataObject holds the deploy item's export: %d DataObjects", len(dos))
	}
}

// checkPreviewGone waits until the preview, its record, its Cleaner and
// everything the Installation owned are deleted.
func checkPreviewGone(t *testing.T, ctx context.Context, c client.Interface, ns string) {
	t.Helper()
	testkit.EventuallyNil(t, 90*time.Second, "the preview and all it owned deleted", func() error {
		var left []string
		for _, o := range []struct{ kind, name string }{{api.KindInstallation, "preview-2"}, {api.KindDataObject, "pr-2"}, {api.KindCleaner, "preview-2"}} {
			if _, err := c.Get(ctx, o.kind, ns, o.name); !errors.Is(err, api.ErrNotFound) {
				left = append(left, o.kind+"/"+o.name)
			}
		}
		for _, kind := range []string{api.KindExecution, api.KindDeployItem, api.KindDataObject} { // and the exports' DataObjects
			l, err := c.List(ctx, kind, ns, api.ListOptions{})
			if err != nil {
				return err
			}
			if n := len(l.Items); n > 0 {
				left = append(left, fmt.Sprintf("%d %s", n, kind))
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("still there: %s", strings.Join(left, ", "))
		}
		return nil
	})
}

// storyPayload reads one of GitHub's payloads from the gateway's testdata.
func storyPayload(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "gateway", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// webhookResult is the Gateway's answer to a delivery (docs/gateways.md).
type webhookResult struct {
	Events  []string `json:"events"`
	Outcome string   `json:"outcome"`
}

// deliver posts body to webhook as GitHub delivers a pull_request event,
// signed with the example's secret (X-Hub-Signature-256: sha256= and the
// hex HMAC-SHA256 of the body), with no API token, and decodes the answer,
// failing unless it is 200.
func deliver(t *testing.T, hc *http.Client, webhook, delivery string, body []byte) webhookResult {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, webhook, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/044aadd")
	req.Header.Set("X-GitHub-Event", "pull_request")
	req.Header.Set("X-GitHub-Delivery", delivery)
	mac := hmac.New(sha256.New, []byte(storyWebhookSecret))
	mac.Write(body)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("delivery %s: %d %s", delivery, resp.StatusCode, b)
	}
	var res webhookResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

package commitstatus_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/commitstatus"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/manager"
)

const ns = deploytest.NS

// fakeGitHub stands in for GitHub's status API: it records every request
// and refuses the first failFirst with 502.
type fakeGitHub struct {
	mu        sync.Mutex
	failFirst int
	seen      int
	posted    []posted // the requests answered 201, in order
	got       chan struct{}
}

type posted struct {
	Method, Path, Auth string
	Body               map[string]string
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen++
	if f.seen <= f.failFirst {
		http.Error(w, `{"message":"Server Error"}`, http.StatusBadGateway)
		return
	}
	var body map[string]string
	_ = json.Unmarshal(b, &body)
	f.posted = append(f.posted, posted{r.Method, r.URL.Path, r.Header.Get("Authorization"), body})
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(b)
	select {
	case f.got <- struct{}{}:
	default:
	}
}

func (f *fakeGitHub) requests() []posted {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]posted(nil), f.posted...)
}

// waitPosted waits until n statuses were posted.
func (f *fakeGitHub) waitPosted(t *testing.T, n int) []posted {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if p := f.requests(); len(p) >= n {
			return p
		}
		select {
		case <-f.got:
		case <-deadline:
			t.Fatalf("%d statuses posted, want %d: %+v", len(f.requests()), n, f.requests())
		}
	}
}

// setup runs the reporter against a fake GitHub, with a github Gateway
// reporting there and an Event of it for project preview.
func setup(t *testing.T, failFirst int) (*deploytest.Env, *fakeGitHub, *api.Event) {
	gh := &fakeGitHub{failFirst: failFirst, got: make(chan struct{}, 1)}
	srv := httptest.NewServer(gh)
	t.Cleanup(srv.Close)
	e := deploytest.Start(t, deploytest.Options{}, manager.Controller{Name: "commitstatus", Setup: func(tm *manager.Term) error {
		return commitstatus.Setup(tm, commitstatus.Options{ConsoleURL: "https://cairn.example.com/ui/"})
	}})
	ctx := context.Background()
	if _, err := client.For[*api.Secret](e.C).Create(ctx, &api.Secret{ObjectMeta: api.ObjectMeta{Name: "gh", Namespace: ns},
		StringData: map[string]string{"token": "ghp_reporting"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*api.Gateway](e.C).Create(ctx, &api.Gateway{ObjectMeta: api.ObjectMeta{Name: "github", Namespace: ns},
		Spec: api.GatewaySpec{Type: api.GatewayGitHub, SecretRef: api.SecretKeyRef{Name: "hook", Key: "secret"},
			Report: &api.GatewayReport{TokenSecretRef: api.SecretKeyRef{Name: "gh", Key: "token"}, APIURL: srv.URL + "/api/v3"}}}); err != nil {
		t.Fatal(err)
	}
	worker := api.WorkerSpec{Command: []string{"true"}}
	if _, err := client.For[*api.Project](e.C).Create(ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: "preview", Namespace: ns},
		Spec: api.ProjectSpec{WorkerTemplate: worker}}); err != nil {
		t.Fatal(err)
	}
	ev, err := client.For[*api.Event](e.C).Create(ctx, &api.Event{ObjectMeta: api.ObjectMeta{Name: "preview-1", Namespace: ns,
		Annotations: map[string]string{"cairn.dev/gateway": "github"}},
		Spec: api.EventSpec{Project: "preview", Source: "github", Type: "pull_request:opened", Worker: worker,
			Qualifiers: map[string]string{"repo": "Codertocat/Hello-World"},
			Labels:     map[string]string{"sha": "ec26c3e57ca3a959ca5aad62de7213c562f8c821", "pr": "2"}},
		Status: api.EventStatus{Worker: api.WorkerStatus{Phase: api.PhasePending}}})
	if err != nil {
		t.Fatal(err)
	}
	return e, gh, ev
}

// phase moves the event's worker to p, as the scheduler does.
func phase(t *testing.T, e *deploytest.Env, ev *api.Event, p api.EventPhase) *api.Event {
	t.Helper()
	ev.Status.Worker.Phase = p
	out, err := client.For[*api.Event](e.C).UpdateStatus(context.Background(), ev)
	if err != nil {
		t.Fatalf("set %s: %v", p, err)
	}
	return out
}

func TestReport_PendingOnRunningThenSuccessWithTheExactRequests(t *testing.T) {
	e, gh, ev := setup(t, 0)
	ev = phase(t, e, ev, api.PhaseStarting)
	ev = phase(t, e, ev, api.PhaseRunning)
	gh.waitPosted(t, 1)
	phase(t, e, ev, api.PhaseSucceeded)
	got := gh.waitPosted(t, 2)
	path := "/api/v3/repos/Codertocat/Hello-World/statuses/ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	target := "https://cairn.example.com/ui/namespaces/deploy/events/preview-1"
	want := []posted{
		{"POST", path, "Bearer ghp_reporting", map[string]string{"state": "pending", "context": "cairn/preview",
			"description": "worker RUNNING", "target_url": target}},
		{"POST", path, "Bearer ghp_reporting", map[string]string{"state": "success", "context": "cairn/preview",
			"description": "worker SUCCEEDED", "target_url": target}},
	}
	if len(got) != 2 {
		t.Fatalf("posted %+v, want %+v", got, want)
	}
	for i := range want {
		if g, w := got[i], want[i]; g.Method != w.Method || g.Path != w.Path || g.Auth != w.Auth || len(g.Body) != len(w.Body) ||
			g.Body["state"] != w.Body["state"] || g.Body["context"] != w.Body["context"] ||
			g.Body["description"] != w.Body["description"] || g.Body["target_url"] != w.Body["target_url"] {
			t.Errorf("request %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestReport_FailuresAreRetriedAndNeverChangeTheEvent(t *testing.T) {
	e, gh, ev := setup(t, 3)
	ev = phase(t, e, ev, api.PhaseStarting)
	ev = phase(t, e, ev, api.PhaseRunning)
	ev = phase(t, e, ev, api.PhaseFailed)
	got := gh.waitPosted(t, 1)
	if got[0].Body["state"] != "failure" {
		t.Errorf("posted %+v, want failure after the retries", got[0])
	}
	gh.mu.Lock()
	seen := gh.seen
	gh.mu.Unlock()
	if seen < 4 {
		t.Errorf("%d requests, want the 3 refused and a retry", seen)
	}
	now, err := client.For[*api.Event](e.C).Get(context.Background(), ns, ev.Name)
	if err != nil {
		t.Fatal(err)
	}
	if now.ResourceVersion != ev.ResourceVersion {
		t.Errorf("the event changed (resourceVersion %s → %s): reporting must never write it", ev.ResourceVersion, now.ResourceVersion)
	}
}

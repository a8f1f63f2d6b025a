package event_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/internal/testkit"
)

// fakeGitHub stands in for GitHub's commit status API on loopback: it
// records every request and answers 201.
type fakeGitHub struct {
	URL string

	mu   sync.Mutex
	seen []statusRequest
}

// statusRequest is one request as GitHub saw it.
type statusRequest struct {
	Method, Path, Auth string
	Body               map[string]string
}

// wantStatus is an event whose worker succeeded and the head commit its
// statuses go to.
type wantStatus struct{ event, sha string }

// newFakeGitHub starts the stand-in, stopped when t ends.
func newFakeGitHub(t *testing.T) *fakeGitHub {
	f := &fakeGitHub{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]string
		_ = json.Unmarshal(b, &body)
		f.mu.Lock()
		f.seen = append(f.seen, statusRequest{r.Method, r.URL.Path, r.Header.Get("Authorization"), body})
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.Close)
	f.URL = s.URL
	return f
}

func (f *fakeGitHub) requests() []statusRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]statusRequest(nil), f.seen...)
}

// eventURL is the console's page of the story's event name.
func eventURL(name string) string { return storyConsole + "namespaces/previews/events/" + name }

// waitSuccess waits until GitHub was told the worker of event succeeded.
func (f *fakeGitHub) waitSuccess(t *testing.T, event string) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, "the success status of "+event, func() bool {
		for _, r := range f.requests() {
			if r.Body["target_url"] == eventURL(event) && r.Body["state"] == "success" {
				return true
			}
		}
		return false
	})
}

// check asserts GitHub saw exactly, for each event in order, a pending
// then a success status on its commit, and nothing else.
func (f *fakeGitHub) check(t *testing.T, want []wantStatus) {
	t.Helper()
	var exp []statusRequest
	for _, w := range want {
		path := "/repos/Codertocat/Hello-World/statuses/" + w.sha
		for _, st := range []struct{ state, desc string }{{"pending", "worker RUNNING"}, {"success", "worker SUCCEEDED"}} {
			exp = append(exp, statusRequest{"POST", path, "Bearer " + storyToken, map[string]string{
				"state": st.state, "context": "cairn/previews", "description": st.desc, "target_url": eventURL(w.event)}})
		}
	}
	got := f.requests()
	if len(got) != len(exp) {
		t.Fatalf("GitHub saw %d requests, want %d:\n%s", len(got), len(exp), dump(got))
	}
	for i, w := range exp {
		g := got[i]
		same := g.Method == w.Method && g.Path == w.Path && g.Auth == w.Auth && len(g.Body) == len(w.Body)
		for k, v := range w.Body {
			same = same && g.Body[k] == v
		}
		if !same {
			t.Errorf("request %d = %+v, want %+v", i, g, w)
		}
	}
}

// dump shows requests one a line, the token cut.
func dump(rs []statusRequest) string {
	var b strings.Builder
	for _, r := range rs {
		r.Auth = strings.SplitN(r.Auth, " ", 2)[0] + " ..."
		b.WriteString(r.Method + " " + r.Path + " " + r.Auth + " " + r.Body["state"] + " " + r.Body["target_url"] + "\n")
	}
	return b.String()
}

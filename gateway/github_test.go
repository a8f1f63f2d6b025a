package gateway

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	"cairn.dev/cairn/api"
)

func readPayload(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const headSHA = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"

func TestMapGitHub_EachDeliveryAsDESIGNSays(t *testing.T) {
	repo := map[string]string{"repo": "Codertocat/Hello-World"}
	pr := func(extra ...string) map[string]string {
		m := map[string]string{"pr": "2", "branch": "changes", "sha": headSHA, "fork": "false"}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		event, file string
		typ         string
		labels      map[string]string
		ignored     bool
	}{
		{"push", "push.json", "push", map[string]string{"branch": "feature/login", "sha": headSHA, "fork": "false"}, false},
		{"pull_request", "pull_request_opened.json", "pull_request:opened", pr(), false},
		{"pull_request", "pull_request_synchronize.json", "pull_request:synchronize", pr(), false},
		{"pull_request", "pull_request_reopened.json", "pull_request:reopened", pr(), false},
		{"pull_request", "pull_request_closed.json", "pull_request:closed", pr(), false},
		{"pull_request", "pull_request_labeled.json", "pull_request:labeled", pr("label", "preview"), false},
		{"pull_request", "pull_request_unlabeled.json", "pull_request:unlabeled", pr("label", "preview"), false},
		{"pull_request", "pull_request_fork.json", "pull_request:opened",
			map[string]string{"pr": "3", "branch": "patch-1", "sha": headSHA, "fork": "true"}, false},
		{"issue_comment", "issue_comment.json", "issue_comment:created", map[string]string{"pr": "2", "fork": "false"}, false},
		{"check_suite", "check_suite.json", "check_suite:completed", pr(), false},
		{"pull_request", "pull_request_edited.json", "", nil, true},
		{"star", "star.json", "", nil, true},
	} {
		t.Run(tc.file, func(t *testing.T) {
			body := readPayload(t, tc.file)
			d, err := MapGitHub(tc.event, body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.ignored {
				if d.Ignored == "" || d.Type != "" {
					t.Fatalf("got %+v, want it ignored", d)
				}
				return
			}
			if d.Ignored != "" || d.Ping {
				t.Fatalf("got %+v, want an event", d)
			}
			if d.Source != "github" || d.Type != tc.typ || !maps.Equal(d.Qualifiers, repo) || !maps.Equal(d.Labels, tc.labels) {
				t.Errorf("got source %q type %q qualifiers %v labels %v, want github %q %v %v", d.Source, d.Type, d.Qualifiers, d.Labels,
					tc.typ, repo, tc.labels)
			}
			if d.Payload != string(body) {
				t.Error("the payload is not the body")
			}
		})
	}
}

func TestMapGitHub_PingIsAnswered(t *testing.T) {
	d, err := MapGitHub("ping", readPayload(t, "ping.json"))
	if err != nil || !d.Ping {
		t.Fatalf("got %+v, %v, want a ping", d, err)
	}
}

func TestMapGitHub_ForkDecision(t *testing.T) {
	base := &ghRepo{ID: 1, FullName: "o/r"}
	for _, tc := range []struct {
		name       string
		head, base *ghRepo
		fork       bool
	}{
		{"same repository", &ghRepo{ID: 1, FullName: "o/r"}, base, false},
		{"another repository", &ghRepo{ID: 2, FullName: "x/r"}, base, true},
		{"a renamed one, same id", &ghRepo{ID: 1, FullName: "o/new"}, base, false},
		{"no ids: by name, any case", &ghRepo{FullName: "O/R"}, &ghRepo{FullName: "o/r"}, false},
		{"head repository deleted", nil, base, true},
	} {
		if got := isFork(tc.head, tc.base); got != tc.fork {
			t.Errorf("%s: isFork = %v, want %v", tc.name, got, tc.fork)
		}
	}
	// A comment from someone who cannot write to the repository is a
	// fork's; a check suite listing no pull request cannot be told apart
	// from a fork's.
	for _, tc := range []struct {
		name, event, body, fork string
	}{
		{"outside commenter", "issue_comment", `{"action":"created","issue":{"number":2,"pull_request":{}},` +
			`"comment":{"author_association":"CONTRIBUTOR"},"repository":{"full_name":"o/r"}}`, "true"},
		{"member commenter", "issue_comment", `{"action":"created","issue":{"number":2,"pull_request":{}},` +
			`"comment":{"author_association":"MEMBER"},"repository":{"full_name":"o/r"}}`, "false"},
		{"suite without pull requests", "check_suite", `{"action":"requested","check_suite":{"head_sha":"a","pull_requests":[]},` +
			`"repository":{"full_name":"o/r"}}`, "true"},
	} {
		d, err := MapGitHub(tc.event, []byte(tc.body))
		if err != nil || d.Labels["fork"] != tc.fork {
			t.Errorf("%s: fork %q, %v; want %q", tc.name, d.Labels["fork"], err, tc.fork)
		}
	}
}

func TestMapGitHub_BadBodies(t *testing.T) {
	for _, tc := range []struct{ name, event, body string }{
		{"not JSON", "push", "payload=%7B%7D"},
		{"an array", "push", "[]"},
		{"no repository", "push", `{"ref":"refs/heads/main"}`},
	} {
		if _, err := MapGitHub(tc.event, []byte(tc.body)); api.ReasonOf(err) != api.ReasonBadRequest {
			t.Errorf("%s: error %v, want BadRequest", tc.name, err)
		}
	}
}

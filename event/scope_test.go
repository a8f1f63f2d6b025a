package event_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/store"
)

func TestJobs_CreatedByTheWorkerWithItsOwnToken(t *testing.T) {
	e := start(t)
	e.project("p", api.ProjectSpec{})
	ev, other := e.create("p"), e.create("p")
	e.setPhase(ev.Name, api.PhaseStarting, api.PhaseRunning)
	e.setPhase(other.Name, api.PhaseStarting, api.PhaseRunning)
	tok, otherTok := e.token(ev.Name), e.token(other.Name)
	job := func(name string) map[string]any {
		return map[string]any{"name": name, "spec": map[string]any{"command": []string{"sh", "-c", "true"}}}
	}
	path := "/namespaces/default/events/" + ev.Name + "/jobs"
	for _, tc := range []struct {
		name  string
		token string
		body  map[string]any
		code  int
		says  string
	}{
		{"its own token", tok, job("build"), 201, ""},
		{"duplicate name", tok, job("build"), 409, "build"},
		{"another event's token", otherTok, job("sneak"), 403, "own event"},
		{"admin", e.s.Token, job("admin-job"), 201, ""},
		{"bad name", tok, job("Bad_Name"), 422, "name"},
		{"no command", tok, map[string]any{"name": "x", "spec": map[string]any{}}, 422, "spec.command"},
		{"no token", "", job("anon"), 401, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, b := e.do("POST", path, tc.token, tc.body)
			if code != tc.code || !strings.Contains(string(b), tc.says) {
				t.Fatalf("POST jobs = %d %s, want %d naming %q", code, b, tc.code, tc.says)
			}
		})
	}
	got := e.get(ev.Name).Status.Jobs
	if len(got) != 2 || got[0].Name != "build" || got[0].Phase != api.PhasePending || got[1].Name != "admin-job" {
		t.Fatalf("jobs = %+v, want build and admin-job, PENDING", got)
	}
	pending := e.create("p")
	if code, b := e.do("POST", "/namespaces/default/events/"+pending.Name+"/jobs", e.s.Token, job("early")); code != 409 {
		t.Fatalf("a job for a PENDING worker = %d %s, want 409", code, b)
	}
}

func TestWorkerToken_MayDoOnlyWhatItsScopeGrants(t *testing.T) {
	e := start(t)
	e.secret("db", map[string]string{"password": "x"})
	e.project("p", api.ProjectSpec{WorkerPermissions: []api.PermissionRule{
		{Kinds: []string{"DataObject"}, Verbs: []string{"get", "list", "create", "delete"}}}})
	if _, err := e.c.Create(e.ctx, &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindNamespace},
		ObjectMeta: api.ObjectMeta{Name: "other"}}); err != nil {
		t.Fatal(err)
	}
	ev, other := e.create("p"), e.create("p")
	e.setPhase(ev.Name, api.PhaseStarting, api.PhaseRunning)
	tok := e.token(ev.Name)
	data := map[string]any{"apiVersion": api.APIVersion, "kind": "DataObject", "metadata": map[string]any{"name": "d1"}, "data": map[string]any{"a": 1}}
	for _, tc := range []struct {
		name         string
		method, path string
		body         any
		code         int
	}{
		{"read its own event", "GET", "/namespaces/default/events/" + ev.Name, nil, 200},
		{"discovery", "GET", "", nil, 200},
		{"create a granted kind", "POST", "/namespaces/default/dataobjects", data, 201},
		{"list a granted kind", "GET", "/namespaces/default/dataobjects", nil, 200},
		{"read another event", "GET", "/namespaces/default/events/" + other.Name, nil, 403},
		{"list events", "GET", "/namespaces/default/events", nil, 403},
		{"cancel its own event", "POST", "/namespaces/default/events/" + ev.Name + "/cancel", nil, 403},
		{"write its own status", "PUT", "/namespaces/default/events/" + ev.Name + "/status", ev, 403},
		{"read secrets not granted", "GET", "/namespaces/default/secrets/db", nil, 403},
		{"read its event's secret", "GET", "/namespaces/default/secrets/" + ev.Name, nil, 403},
		{"another namespace", "GET", "/namespaces/other/dataobjects", nil, 403},
		{"namespaces", "GET", "/namespaces", nil, 403},
		{"create an event", "POST", "/namespaces/default/events", api.Event{Spec: api.EventSpec{Project: "p", Source: "s", Type: "t"}}, 403},
		{"update a granted kind without update", "PUT", "/namespaces/default/dataobjects/d1", data, 403},
		{"across namespaces", "GET", "/dataobjects", nil, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, b := e.do(tc.method, tc.path, tok, tc.body)
			if code != tc.code {
				t.Fatalf("%s %s = %d %s, want %d", tc.method, tc.path, code, b, tc.code)
			}
		})
	}
	req, _ := http.NewRequest("GET", e.s.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := e.s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("/metrics with a worker token = %d, want 403", resp.StatusCode)
	}
}

func TestWorkerToken_StopsWorkingWhenItsEventIsTerminalOrDeleted(t *testing.T) {
	e := start(t)
	e.project("p", api.ProjectSpec{})
	done, gone := e.create("p"), e.create("p")
	e.setPhase(done.Name, api.PhaseStarting, api.PhaseRunning)
	e.setPhase(gone.Name, api.PhaseStarting, api.PhaseRunning)
	doneTok, goneTok := e.token(done.Name), e.token(gone.Name)
	for _, c := range []struct{ name, tok string }{{done.Name, doneTok}, {gone.Name, goneTok}} {
		if code, b := e.do("GET", "/namespaces/default/events/"+c.name, c.tok, nil); code != 200 {
			t.Fatalf("a running event's token: %d %s", code, b)
		}
	}
	e.setPhase(done.Name, api.PhaseSucceeded)
	if code, b := e.do("GET", "/namespaces/default/events/"+done.Name, doneTok, nil); code != 403 || !strings.Contains(string(b), "SUCCEEDED") {
		t.Fatalf("a terminal event's token: %d %s, want 403 naming the phase", code, b)
	}
	if _, _, err := e.c.Delete(e.ctx, api.KindEvent, "default", gone.Name, api.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if code, b := e.do("GET", "/namespaces/default/events/"+gone.Name, goneTok, nil); code != 403 || !strings.Contains(string(b), "deleted") {
		t.Fatalf("a deleted event's token: %d %s, want 403 saying deleted", code, b)
	}
	if _, err := e.s.Store.Get(e.ctx, auth.TokenPrefix+auth.Hash(goneTok)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the deleted event's token is still registered (%v)", err)
	}
}

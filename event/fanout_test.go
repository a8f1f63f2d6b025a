package event_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/event"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/server/servertest"
	"cairn.dev/cairn/store"
)

// written is what the store holds for the events of the namespace
// default: the events and their system records (secrets, tokens).
func (e *env) written() (events []string, records int) {
	e.t.Helper()
	l, err := e.c.List(e.ctx, api.KindEvent, "default", api.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, o := range l.Items {
		events = append(events, o.Name)
	}
	res, err := e.s.Registry.Store().List(e.ctx, registry.SystemPrefix+"events/default/", store.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return events, len(res.KVs)
}

func subscribed(secrets ...string) api.ProjectSpec {
	return api.ProjectSpec{Secrets: secrets, EventSubscriptions: []api.EventSubscription{{Source: "github", Types: []string{"push"}}}}
}

// TestFanOut_AProjectThatCannotHaveItsEventLeavesNothingWritten: the
// projects a and b could have their events, c names a Secret that does
// not exist: the fan-out fails naming c, and neither a's nor b's event
// (nor any record) was written.
func TestFanOut_AProjectThatCannotHaveItsEventLeavesNothingWritten(t *testing.T) {
	e := start(t)
	e.secret("db", map[string]string{"password": "pw"})
	e.project("a", subscribed("db"))
	e.project("b", subscribed())
	e.project("c", subscribed("missing"))
	code, b := e.do("POST", "/namespaces/default/events", e.s.Token, api.Event{Spec: api.EventSpec{Source: "github", Type: "push"}})
	if evs, recs := e.written(); len(evs) != 0 || recs != 0 {
		t.Fatalf("after the failed fan-out the store holds events %v and %d records, want none", evs, recs)
	}
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(b), "project c") || !strings.Contains(string(b), "missing") {
		t.Fatalf("fan-out = %d %s, want 422 naming project c and its missing Secret", code, b)
	}
}

// TestFanOut_BeyondOneTransactionListsWhatWasWrittenPerProject: a fan-out
// too large for one transaction (each project names 16 Secrets, the store
// takes 35 conditions) is written in several; when a later one fails (b's
// event would take the namespace over its object limit), the answer is no
// error but says, per project, which event was created and why the other
// was not.
func TestFanOut_BeyondOneTransactionListsWhatWasWrittenPerProject(t *testing.T) {
	const objects = 16 + 2 // the Secrets and the projects
	e := start(t, servertest.WithRegistryOptions(func(o *registry.Options) {
		o.MaxTxnOps, o.NamespaceMaxObjects = registry.MinTxnOps, objects+1
	}))
	var secrets []string
	for i := range 16 {
		name := fmt.Sprintf("s%02d", i)
		e.secret(name, map[string]string{name: "v"})
		secrets = append(secrets, name)
	}
	e.project("a", subscribed(secrets...))
	e.project("b", subscribed(secrets...))
	code, b := e.do("POST", "/namespaces/default/events", e.s.Token, api.Event{Spec: api.EventSpec{Source: "github", Type: "push"}})
	if code != http.StatusCreated {
		t.Fatalf("fan-out = %d %s, want 201 listing what was written", code, b)
	}
	var res event.FanOutResult
	if err := json.Unmarshal(b, &res); err != nil || res.Kind != "EventList" {
		t.Fatalf("fan-out answered %s (%v), want an EventList", b, err)
	}
	if len(res.Items) != 1 || res.Items[0].Labels[api.LabelEventProject] != "a" {
		t.Fatalf("items %s, want a's event alone", mustJSON(t, res.Items))
	}
	p := res.Projects
	if len(p) != 2 || p[0].Project != "a" || p[0].Event != res.Items[0].Name || p[0].Error != nil ||
		p[1].Project != "b" || p[1].Event != "" || p[1].Error == nil || p[1].Error.Reason != api.ReasonForbidden {
		t.Fatalf("projects %s, want a's event created and b's not, Forbidden", mustJSON(t, p))
	}
	if evs, recs := e.written(); len(evs) != 1 || evs[0] != p[0].Event || recs != 2 {
		t.Fatalf("the store holds events %v and %d records, want %s and its two records", evs, recs, p[0].Event)
	}
}

// TestFanOut_ManyProjectsAreAllCreated: more projects than one
// transaction holds are all given their event, each listed.
func TestFanOut_ManyProjectsAreAllCreated(t *testing.T) {
	e := start(t, servertest.WithRegistryOptions(func(o *registry.Options) { o.MaxTxnOps = registry.MinTxnOps }))
	const n = 40
	for i := range n {
		e.project(fmt.Sprintf("p%02d", i), subscribed())
	}
	code, b := e.do("POST", "/namespaces/default/events", e.s.Token, api.Event{Spec: api.EventSpec{Source: "github", Type: "push"}})
	if code != http.StatusCreated {
		t.Fatalf("fan-out = %d %s", code, b)
	}
	var res event.FanOutResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != n || len(res.Projects) != n {
		t.Fatalf("%d items, %d projects listed, want %d of each", len(res.Items), len(res.Projects), n)
	}
	for i, p := range res.Projects {
		if p.Project != fmt.Sprintf("p%02d", i) || p.Event != res.Items[i].Name || p.Error != nil {
			t.Fatalf("project %d: %+v, want p%02d with event %s", i, p, i, res.Items[i].Name)
		}
	}
	if evs, recs := e.written(); len(evs) != n || recs != 2*n {
		t.Fatalf("the store holds %d events and %d records, want %d and %d", len(evs), recs, n, 2*n)
	}
}

package event_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/event"
)

// fanOut posts a github push event by fan-out and returns the projects
// given an Event, in name order.
func (e *env) fanOut() []string {
	e.t.Helper()
	code, b := e.do("POST", "/namespaces/default/events", e.s.Token, api.Event{Spec: api.EventSpec{Source: "github", Type: "push"}})
	if code != http.StatusCreated {
		e.t.Fatalf("fan-out = %d %s", code, b)
	}
	var res event.FanOutResult
	if err := json.Unmarshal(b, &res); err != nil {
		e.t.Fatal(err)
	}
	projects := []string{}
	for _, p := range res.Projects {
		if p.Event == "" {
			e.t.Fatalf("project %s got no event: %+v", p.Project, p.Error)
		}
		projects = append(projects, p.Project)
	}
	return projects
}

// TestFanOut_TheNextFanOutSeesEveryProjectChange: the fan-out keeps the
// projects' subscriptions between events; a project created, changed
// (subscribed or unsubscribed) or deleted after a fan-out is matched, or
// no longer matched, by the very next one.
func TestFanOut_TheNextFanOutSeesEveryProjectChange(t *testing.T) {
	e := start(t)
	projects := client.For[*api.Project](e.c)
	e.project("a", subscribed())
	e.project("quiet", api.ProjectSpec{})
	steps := []struct {
		name   string
		change func()
		want   []string
	}{
		{"first", func() {}, []string{"a"}},
		{"unchanged", func() {}, []string{"a"}},
		{"b created", func() { e.project("b", subscribed()) }, []string{"a", "b"}},
		{"quiet subscribes", func() {
			p, err := projects.Get(e.ctx, "default", "quiet")
			if err != nil {
				t.Fatal(err)
			}
			p.Spec.EventSubscriptions = subscribed().EventSubscriptions
			if _, err := projects.Update(e.ctx, p); err != nil {
				t.Fatal(err)
			}
		}, []string{"a", "b", "quiet"}},
		{"a unsubscribes", func() {
			p, err := projects.Get(e.ctx, "default", "a")
			if err != nil {
				t.Fatal(err)
			}
			p.Spec.EventSubscriptions[0].Types = []string{"pull_request"}
			if _, err := projects.Update(e.ctx, p); err != nil {
				t.Fatal(err)
			}
		}, []string{"b", "quiet"}},
		{"b deleted", func() {
			if _, gone, err := projects.Delete(e.ctx, "default", "b", api.DeleteOptions{Force: true}); err != nil || !gone {
				t.Fatalf("delete b: gone %v, %v", gone, err)
			}
		}, []string{"quiet"}},
	}
	for _, s := range steps {
		s.change()
		if got := e.fanOut(); !slices.Equal(got, s.want) {
			t.Fatalf("after %s: the fan-out created events for %v, want %v", s.name, got, s.want)
		}
	}
}

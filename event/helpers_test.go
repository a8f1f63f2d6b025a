package event_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/event"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/server/servertest"
)

// env is a real API server serving the event endpoints.
type env struct {
	t   *testing.T
	s   *servertest.Server
	svc *event.Service
	c   client.Interface
	ctx context.Context
}

// start starts the server, with opts besides the event service's.
func start(t *testing.T, opts ...servertest.Option) *env {
	t.Helper()
	svc := event.New(event.Options{})
	s := servertest.Start(t, append([]servertest.Option{
		servertest.WithKinds(kinds.All(kinds.Deps{EventActions: svc.Actions(), EventRemoveWrites: svc.RemoveWrites})...),
		servertest.WithAuthorize(svc.Authorize),
		servertest.WithRegistryOptions(func(o *registry.Options) { o.Authority = svc })}, opts...)...)
	svc.Bind(s.Registry, nil)
	s.Auth.SetScopeCheck(svc.CheckToken)
	return &env{t: t, s: s, svc: svc, c: s.Client(t), ctx: context.Background()}
}

// do sends an HTTP request with token and returns the code and body.
func (e *env) do(method, path, token string, body any) (int, []byte) {
	e.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.s.URL+api.BasePath+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.s.HTTPClient().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (e *env) project(name string, spec api.ProjectSpec) {
	e.t.Helper()
	if spec.WorkerTemplate.Command == nil {
		spec.WorkerTemplate.Command = []string{"sh", "-c", "true"}
	}
	if _, err := client.For[*api.Project](e.c).Create(e.ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"}, Spec: spec}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) secret(name string, data map[string]string) {
	e.t.Helper()
	obj := &api.Secret{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"}, StringData: data}
	if _, err := client.For[*api.Secret](e.c).Create(e.ctx, obj); err != nil {
		e.t.Fatal(err)
	}
}

// create posts an event for project and returns it.
func (e *env) create(project string) *api.Event {
	e.t.Helper()
	code, b := e.do("POST", "/namespaces/default/events", e.s.Token,
		api.Event{Spec: api.EventSpec{Project: project, Source: "github", Type: "push"}})
	if code != http.StatusCreated {
		e.t.Fatalf("create: %d %s", code, b)
	}
	var ev api.Event
	if err := json.Unmarshal(b, &ev); err != nil {
		e.t.Fatal(err)
	}
	return &ev
}

func (e *env) get(name string) *api.Event {
	e.t.Helper()
	ev, err := client.For[*api.Event](e.c).Get(e.ctx, "default", name)
	if err != nil {
		e.t.Fatal(err)
	}
	return ev
}

// setPhase moves the event's worker through phases as the controllers do.
func (e *env) setPhase(name string, phases ...api.EventPhase) *api.Event {
	e.t.Helper()
	ev := e.get(name)
	for _, p := range phases {
		ev.Status.Worker.Phase = p
		next, err := client.For[*api.Event](e.c).UpdateStatus(e.ctx, ev)
		if err != nil {
			e.t.Fatalf("set %s: %v", p, err)
		}
		ev = next
	}
	return ev
}

// token mints a token for a unit of the event and registers its hash
// with the admin token, as the scheduler does before it starts a unit.
func (e *env) token(name string) string {
	e.t.Helper()
	tok, err := auth.NewToken()
	if err != nil {
		e.t.Fatal(err)
	}
	ev := e.get(name)
	if code, b := e.do("POST", "/namespaces/default/events/"+name+"/tokens", e.s.Token,
		api.EventTokenRequest{UID: ev.UID, Hash: auth.Hash(tok)}); code != http.StatusCreated {
		e.t.Fatalf("register a token for %s: %d %s", name, code, b)
	}
	return tok
}

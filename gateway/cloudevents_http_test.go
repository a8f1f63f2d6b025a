package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"cairn.dev/cairn/api"
)

const ceToken = "ce-bearer-token"

// ceSend sends one CloudEvent with the sdk's HTTP client to the
// cloudevents Gateway ce, with token ("": none), in structured mode or
// binary, and returns the HTTP status code of the answer.
func (e *env) ceSend(t *testing.T, token, id string, structured bool) int {
	t.Helper()
	opts := []cehttp.Option{cehttp.WithTarget(e.s.URL + api.BasePath + "/namespaces/default/gateways/ce/webhook"),
		cehttp.WithClient(*e.s.HTTPClient())}
	if token != "" {
		opts = append(opts, cehttp.WithHeader("Authorization", "Bearer "+token))
	}
	p, err := cloudevents.NewHTTP(opts...)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cloudevents.NewClient(p)
	if err != nil {
		t.Fatal(err)
	}
	ev := cloudevents.NewEvent()
	ev.SetID(id)
	ev.SetSource("https://ci.example.com/pipelines")
	ev.SetType("com.example.build.finished")
	ev.SetSubject("build 42")
	if err := ev.SetData(cloudevents.ApplicationJSON, map[string]any{"ok": true}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if structured {
		ctx = binding.WithForceStructured(ctx)
	}
	res := c.Send(ctx, ev)
	var hr *cehttp.Result
	if !errors.As(res, &hr) {
		t.Fatalf("send: %v", res)
	}
	return hr.StatusCode
}

func TestWebhook_CloudEventsBinaryAndStructuredWithTheBearerToken(t *testing.T) {
	e := start(t)
	e.gateway("ce", api.GatewayCloudEvents, ceToken)
	e.project("builds", api.ProjectSpec{EventSubscriptions: []api.EventSubscription{{Source: "https://ci.example.com/pipelines",
		Types: []string{"com.example.build.finished"}}}})
	if code := e.ceSend(t, ceToken, "binary-1", false); code != http.StatusOK {
		t.Fatalf("binary mode: %d", code)
	}
	if code := e.ceSend(t, ceToken, "structured-1", true); code != http.StatusOK {
		t.Fatalf("structured mode: %d", code)
	}
	if code := e.ceSend(t, ceToken, "structured-1", true); code != http.StatusOK { // the sender retries
		t.Fatalf("repeated: %d", code)
	}
	evs := e.events()
	if len(evs) != 2 {
		t.Fatalf("%d events, want 2 (one per CloudEvent id)", len(evs))
	}
	for _, ev := range evs {
		if ev.Spec.Project != "builds" || ev.Spec.Source != "https://ci.example.com/pipelines" || ev.Spec.Type != "com.example.build.finished" ||
			ev.Spec.ShortTitle != "build 42" || ev.Spec.Payload != `{"ok":true}` {
			t.Errorf("event %s: %+v", ev.Name, ev.Spec)
		}
	}
}

func TestWebhook_CloudEventsWithABadTokenIs401AndCreatesNothing(t *testing.T) {
	e := start(t)
	e.gateway("ce", api.GatewayCloudEvents, ceToken)
	e.project("builds", api.ProjectSpec{EventSubscriptions: []api.EventSubscription{{Source: "https://ci.example.com/pipelines", Types: []string{"*"}}}})
	for name, token := range map[string]string{"none": "", "wrong": "not-the-token", "an API token": e.s.Token} {
		if code := e.ceSend(t, token, "x-"+name, false); code != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, code)
		}
	}
	if n := len(e.events()); n != 0 {
		t.Errorf("%d events created without the token", n)
	}
}

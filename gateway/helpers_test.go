package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/event"
	"cairn.dev/cairn/gateway"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/server"
	"cairn.dev/cairn/server/servertest"
)

// webhookSecret is the github Gateway's secret in every test.
const webhookSecret = "It's a Secret to Everybody"

// env is a real API server serving Gateways' webhooks and the event
// endpoints, over a real etcd.
type env struct {
	t       *testing.T
	s       *servertest.Server
	svc     *event.Service
	c       client.Interface
	ctx     context.Context
	metrics *prometheus.Registry
	logs    *testkit.Buffer
}

// start starts the server, with opts besides the gateway's and the event
// service's.
func start(t *testing.T, opts ...servertest.Option) *env {
	t.Helper()
	svc := event.New(event.Options{})
	metrics := prometheus.NewRegistry()
	logs := &testkit.Buffer{}
	h, err := gateway.New(gateway.Options{Events: svc, Metrics: metrics,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	s := servertest.Start(t, append([]servertest.Option{
		servertest.WithKinds(kinds.All(kinds.Deps{EventActions: svc.Actions(), EventRemoveWrites: svc.RemoveWrites})...),
		servertest.WithAuthorize(svc.Authorize),
		servertest.WithRegistryOptions(func(o *registry.Options) { o.Authority = svc }),
		servertest.WithServerOptions(func(o *server.Options) { o.Webhooks = h }),
	}, opts...)...)
	svc.Bind(s.Registry, nil)
	h.Bind(s.Registry)
	s.Auth.SetScopeCheck(svc.CheckToken)
	return &env{t: t, s: s, svc: svc, c: s.Client(t), ctx: context.Background(), metrics: metrics, logs: logs}
}

// secret creates the Secret name with data in default.
func (e *env) secret(name string, data map[string]string) {
	e.t.Helper()
	obj := &api.Secret{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"}, StringData: data}
	if _, err := client.For[*api.Secret](e.c).Create(e.ctx, obj); err != nil {
		e.t.Fatal(err)
	}
}

// gateway creates the Gateway name of type typ with its secret (or token)
// value in a Secret of its own.
func (e *env) gateway(name string, typ api.GatewayType, value string) {
	e.t.Helper()
	e.secret(name+"-secret", map[string]string{"value": value})
	gw := &api.Gateway{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"},
		Spec: api.GatewaySpec{Type: typ, SecretRef: api.SecretKeyRef{Name: name + "-secret", Key: "value"}}}
	if _, err := client.For[*api.Gateway](e.c).Create(e.ctx, gw); err != nil {
		e.t.Fatal(err)
	}
}

// project creates a project subscribed to subs.
func (e *env) project(name string, spec api.ProjectSpec) {
	e.t.Helper()
	spec.WorkerTemplate.Command = []string{"sh", "-c", "true"}
	if _, err := client.For[*api.Project](e.c).Create(e.ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"}, Spec: spec}); err != nil {
		e.t.Fatal(err)
	}
}

// prSubscription subscribes to the pull requests of Codertocat/Hello-World.
func prSubscription(types ...string) []api.EventSubscription {
	return []api.EventSubscription{{Source: "github", Types: types, Qualifiers: map[string]string{"repo": "Codertocat/Hello-World"}}}
}

// payload reads a GitHub payload from testdata.
func payload(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// post sends body to the webhook of gateway gw with header, with no API
// token, and returns the code and body.
func (e *env) post(gw string, header http.Header, body []byte) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.s.URL+api.BasePath+"/namespaces/default/gateways/"+gw+"/webhook", bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header = header
	resp, err := e.s.HTTPClient().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// github is the headers of a GitHub delivery of event, signed with secret
// ("": unsigned).
func github(event, delivery, secret string, body []byte) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/044aadd")
	h.Set(gateway.EventHeader, event)
	h.Set(gateway.DeliveryHeader, delivery)
	if secret != "" {
		h.Set(gateway.SignatureHeader, gateway.SignatureOf([]byte(secret), body))
	}
	return h
}

// deliver posts a signed GitHub delivery to gw and decodes its answer,
// failing unless it is 200.
func (e *env) deliver(gw, event, delivery string, body []byte) gateway.Result {
	e.t.Helper()
	code, b := e.post(gw, github(event, delivery, webhookSecret, body), body)
	if code != http.StatusOK {
		e.t.Fatalf("deliver %s %s: %d %s", event, delivery, code, b)
	}
	var res gateway.Result
	if err := json.Unmarshal(b, &res); err != nil {
		e.t.Fatal(err)
	}
	return res
}

// events lists the events of default.
func (e *env) events() []*api.Event {
	e.t.Helper()
	l, _, err := client.For[*api.Event](e.c).List(e.ctx, "default", api.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

// counter is the value of the counter name with labels, 0 when absent.
func (e *env) counter(name string, labels map[string]string) float64 {
	e.t.Helper()
	mfs, err := e.metrics.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// reasonOf is the reason of an api.Status body.
func reasonOf(b []byte) string {
	var st api.Status
	_ = json.Unmarshal(b, &st)
	return string(st.Reason)
}

// eventNamed reads the event name of default.
func (e *env) eventNamed(name string) *api.Event {
	e.t.Helper()
	ev, err := client.For[*api.Event](e.c).Get(e.ctx, "default", name)
	if err != nil {
		e.t.Fatal(err)
	}
	return ev
}

// servertestSharedWith makes a server share e's store (and CA), as a
// restarted or second API server does.
func servertestSharedWith(e *env) servertest.Option { return servertest.SharedWith(e.s) }

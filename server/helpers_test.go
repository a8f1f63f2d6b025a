package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/server/servertest"
)

const base = api.BasePath

// path joins segments under the API base path.
func path(segs ...string) string { return base + "/" + strings.Join(segs, "/") }

// nsPath is /apis/.../namespaces/{ns}/{rest...}.
func nsPath(ns string, rest ...string) string {
	return path(append([]string{"namespaces", ns}, rest...)...)
}

// client sends requests to a test server with a bearer token.
type client struct {
	t     testing.TB
	url   string
	token string
	hc    *http.Client
}

func newClient(t testing.TB, s *servertest.Server) *client {
	return &client{t: t, url: s.URL, token: s.Token, hc: s.HTTPClient()}
}

// as returns a client using token instead.
func (c *client) as(token string) *client { cc := *c; cc.token = token; return &cc }

type reply struct {
	code   int
	body   []byte
	header http.Header
}

// do sends a request; body is sent as is when it is a string or []byte and
// as JSON otherwise. headers are key, value pairs.
func (c *client) do(method, p string, body any, headers ...string) reply {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.url+p, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, p, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", method, p, err)
	}
	return reply{code: resp.StatusCode, body: b, header: resp.Header}
}

// expect fails the test unless the reply has code.
func (r reply) expect(t testing.TB, code int) reply {
	t.Helper()
	if r.code != code {
		t.Fatalf("got %d %s, want %d", r.code, r.body, code)
	}
	return r
}

func (r reply) object(t testing.TB) *api.Object {
	t.Helper()
	o := &api.Object{}
	if err := json.Unmarshal(r.body, o); err != nil {
		t.Fatalf("decode object %s: %v", r.body, err)
	}
	return o
}

func (r reply) list(t testing.TB) *api.List {
	t.Helper()
	l := &api.List{}
	if err := json.Unmarshal(r.body, l); err != nil {
		t.Fatalf("decode list %s: %v", r.body, err)
	}
	return l
}

func (r reply) status(t testing.TB) *api.Status {
	t.Helper()
	st := &api.Status{}
	if err := json.Unmarshal(r.body, st); err != nil || st.Kind != "Status" {
		t.Fatalf("decode status %s: %v", r.body, err)
	}
	return st
}

// widget is a test kind with spec, status and actions.
type widget struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata"`
	Spec           widgetSpec   `json:"spec,omitzero"`
	Status         widgetStatus `json:"status,omitzero"`
}

type widgetSpec struct {
	Size  int    `json:"size,omitempty"`
	Color string `json:"color,omitempty"`
}

type widgetStatus struct {
	Phase string `json:"phase,omitempty"`
}

// widgetHooks let a test control the widget actions.
type widgetHooks struct {
	// release unblocks the "slow" action and the second line of "logs".
	release chan struct{}
	// started receives a value when "slow" or "logs" starts.
	started chan struct{}
}

func newWidgetHooks() *widgetHooks {
	return &widgetHooks{release: make(chan struct{}), started: make(chan struct{}, 8)}
}

func widgetKind(h *widgetHooks) registry.Kind {
	echo := func(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
		caller, _ := identity.From(ctx)
		return registry.ActionResult{Object: map[string]string{
			"namespace": req.Namespace, "name": req.Name, "caller": caller.Name,
			"x": req.Query.Get("x"), "body": string(req.Body),
		}}, nil
	}
	return registry.Define(registry.Spec[*widget]{
		Kind: "Widget", Namespaced: true, ShortNames: []string{"wd"},
		Validate: func(_ context.Context, _ *registry.Admission, w *widget) field.ErrorList {
			var errs field.ErrorList
			if w.Spec.Size < 0 {
				errs = append(errs, field.Invalid(field.NewPath("spec", "size"), w.Spec.Size, "must not be negative"))
			}
			if c := w.Spec.Color; c != "" && c != "red" && c != "blue" {
				errs = append(errs, field.NotSupported(field.NewPath("spec", "color"), c, []string{"red", "blue"}))
			}
			return errs
		},
		Actions: []registry.Action{
			{Name: "poke", Method: http.MethodPost, Handle: echo, Params: []string{"x"}},
			{Name: "cancel", Method: http.MethodPost, Collection: true,
				Handle: func(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
					r, err := echo(ctx, req)
					r.Code = http.StatusCreated
					return r, err
				}},
			{Name: "", Method: http.MethodDelete, Collection: true, Params: []string{"phase"},
				Handle: func(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
					if req.Query.Get("phase") == "" {
						return registry.ActionResult{}, api.NewBadRequest("phase: required")
					}
					return echo(ctx, req)
				}},
			{Name: "logs", Method: http.MethodGet,
				Handle: func(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
					return registry.ActionResult{Stream: func(ctx context.Context, w io.Writer, flush func()) error {
						fmt.Fprintf(w, "line 1 of %s\n", req.Name)
						flush()
						h.started <- struct{}{}
						select {
						case <-h.release:
						case <-ctx.Done():
							return ctx.Err()
						}
						fmt.Fprintln(w, "line 2")
						return nil
					}}, nil
				}},
			{Name: "slow", Method: http.MethodGet,
				Handle: func(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
					h.started <- struct{}{}
					<-h.release
					return echo(ctx, req)
				}},
		},
	})
}

// startWithWidgets starts a server that also serves the Widget kind.
func startWithWidgets(t testing.TB, h *widgetHooks, opts ...servertest.Option) *servertest.Server {
	return servertest.Start(t, append([]servertest.Option{servertest.WithKinds(append(kinds.All(kinds.Deps{}), widgetKind(h))...)}, opts...)...)
}

// revision is the store's current revision.
func revision(t testing.TB, s *servertest.Server) int64 {
	t.Helper()
	rev, err := s.Store.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// identityUser is a non-admin caller.
func identityUser(name string) identity.User { return identity.User{Name: name} }

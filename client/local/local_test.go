package local_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/server/servertest"
)

// Widget is a test kind with actions, served next to the real kinds; its
// whoami action answers with the caller the registry sees.
type Widget struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata"`
	Spec           map[string]string `json:"spec,omitempty"`
}

func widgetKind() registry.Kind {
	return registry.Define(registry.Spec[*Widget]{
		Kind:       "Widget",
		Namespaced: true,
		ShortNames: []string{"wd"},
		Actions: []registry.Action{
			{Name: "echo", Method: "POST", Params: []string{"fail", "x"}, Handle: func(_ context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
				if req.Query.Get("fail") != "" {
					return registry.ActionResult{}, api.NewConflict("Widget", req.Name, "asked to fail")
				}
				return registry.ActionResult{Object: map[string]string{
					"name": req.Name, "body": string(req.Body), "x": req.Query.Get("x"),
				}}, nil
			}},
			{Name: "ping", Method: "GET", Collection: true, Handle: func(_ context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
				return registry.ActionResult{Object: map[string]string{"namespace": req.Namespace}}, nil
			}},
			// Any caller may ask whoami; the registry refuses only a call
			// without a caller.
			{Name: "whoami", Method: "GET", Collection: true, Authorize: func(context.Context, authz.Attributes) (authz.Decision, string) {
				return authz.Allow, ""
			}, Handle: func(ctx context.Context, _ registry.ActionRequest) (registry.ActionResult, error) {
				u, ok := identity.From(ctx)
				return registry.ActionResult{Object: map[string]any{"name": u.Name, "admin": u.Admin, "known": ok}}, nil
			}},
			{Name: "lines", Method: "GET", Handle: func(_ context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
				return registry.ActionResult{Stream: func(ctx context.Context, w io.Writer, flush func()) error {
					for i := 1; i <= 3; i++ {
						if _, err := fmt.Fprintf(w, "%s line %d\n", req.Name, i); err != nil {
							return err
						}
						flush()
					}
					return nil
				}}, nil
			}},
		},
	})
}

// start runs a test server serving every kind plus Widget, and returns it
// with an HTTP client and a local client over its registry acting as the
// system identity: the in-process client must behave like the HTTP one.
func start(t *testing.T) (*servertest.Server, map[string]client.Interface) {
	t.Helper()
	srv := servertest.Start(t, servertest.WithKinds(append(kinds.All(kinds.Deps{}), widgetKind())...))
	return srv, map[string]client.Interface{"http": srv.Client(t), "local": local.New(srv.Registry, identity.System())}
}

func TestClient_CRUDBehavesAlikeOverHTTPAndInProcess(t *testing.T) {
	_, clients := start(t)
	for name, c := range clients {
		t.Run(name, func(t *testing.T) {
			ctx := testkit.Context(t)
			ns := "crud-" + name
			nsObj := testkit.Object(api.KindNamespace, "", ns)
			if _, err := c.Create(ctx, nsObj); err != nil {
				t.Fatalf("create namespace: %v", err)
			}
			created, err := c.Create(ctx, testkit.Secret(ns, "a", map[string]string{"k": "v"}, testkit.Labels("tier", "db")))
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if created.UID == "" || created.ResourceVersion == "" || created.Generation != 1 {
				t.Errorf("created object lacks server fields: %+v", created.ObjectMeta)
			}
			if _, err := c.Create(ctx, testkit.Secret(ns, "b", nil, testkit.Labels("tier", "web"))); err != nil {
				t.Fatalf("create b: %v", err)
			}
			gen, err := c.Create(ctx, testkit.Secret(ns, "", nil, testkit.GenerateName("gen-")))
			if err != nil || !strings.HasPrefix(gen.Name, "gen-") || len(gen.Name) <= len("gen-") {
				t.Fatalf("create with generateName: %v, name %q", err, gen.Name)
			}

			got, err := c.Get(ctx, api.KindSecret, ns, "a")
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if got.UID != created.UID {
				t.Errorf("get uid = %s, want %s", got.UID, created.UID)
			}
			var s api.Secret
			if err := got.Into(&s); err != nil || string(s.Data["k"]) != "v" {
				t.Errorf("get data = %v (%v), want k=v", s.Data, err)
			}

			l, err := c.List(ctx, api.KindSecret, ns, api.ListOptions{LabelSelector: "tier=db"})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if len(l.Items) != 1 || l.Items[0].Name != "a" || l.ResourceVersion == "" {
				t.Errorf("list tier=db = %d items (rv %q), want [a]", len(l.Items), l.ResourceVersion)
			}
			page, err := c.List(ctx, api.KindSecret, ns, api.ListOptions{Limit: 2})
			if err != nil || len(page.Items) != 2 || page.Continue == "" {
				t.Fatalf("list limit 2: %v, %d items, continue %q", err, len(page.Items), page.Continue)
			}
			rest, err := c.List(ctx, api.KindSecret, ns, api.ListOptions{Limit: 2, Continue: page.Continue})
			if err != nil || len(rest.Items) != 1 || rest.Continue != "" {
				t.Fatalf("list second page: %v, %d items, continue %q", err, len(rest.Items), rest.Continue)
			}

			got.Labels["tier"] = "cache"
			updated, err := c.Update(ctx, got)
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			if updated.Labels["tier"] != "cache" || updated.ResourceVersion == got.ResourceVersion {
				t.Errorf("update: labels %v rv %s (was %s)", updated.Labels, updated.ResourceVersion, got.ResourceVersion)
			}

			patched, err := c.Patch(ctx, api.KindSecret, ns, "a", []byte(`{"metadata":{"annotations":{"note":"x"}}}`), false)
			if err != nil || patched.Annotations["note"] != "x" {
				t.Fatalf("patch: %v, annotations %v", err, patched.Annotations)
			}

			nsGot, err := c.Get(ctx, api.KindNamespace, "", ns)
			if err != nil {
				t.Fatalf("get namespace: %v", err)
			}
			nsGot.SetField(api.FieldStatus, json.RawMessage(`{"phase":"Active"}`))
			if _, err := c.UpdateStatus(ctx, nsGot); err != nil {
				t.Fatalf("update status: %v", err)
			}
			if _, err := c.Patch(ctx, api.KindNamespace, "", ns, []byte(`{"status":{"phase":"Active"}}`), true); err != nil {
				t.Fatalf("patch status: %v", err)
			}

			marked, gone, err := c.Delete(ctx, api.KindSecret, ns, "a", api.DeleteOptions{})
			if err != nil || gone || !marked.Deleting() || !marked.HasFinalizer(api.FinalizerCascadeDeletion) {
				t.Fatalf("delete: err %v gone %v deleting %v finalizers %v", err, gone, marked.Deleting(), marked.Finalizers)
			}
			if _, gone, err := c.Delete(ctx, api.KindSecret, ns, "b", api.DeleteOptions{Force: true}); err != nil || !gone {
				t.Fatalf("force delete: err %v gone %v", err, gone)
			}
			if _, err := c.Get(ctx, api.KindSecret, ns, "b"); !errors.Is(err, api.ErrNotFound) {
				t.Errorf("get after force delete = %v, want NotFound", err)
			}

			ks, err := c.Kinds(ctx)
			if err != nil {
				t.Fatalf("kinds: %v", err)
			}
			var names []string
			for _, k := range ks {
				names = append(names, k.Kind)
			}
			if !strings.Contains(strings.Join(names, ","), api.KindSecret) {
				t.Errorf("kinds = %v, want Secret among them", names)
			}
		})
	}
}

func TestClient_ErrorsMatchAPISentinels(t *testing.T) {
	srv, clients := start(t)
	ctx := testkit.Context(t)
	lc := clients["local"]
	if _, err := lc.Create(ctx, testkit.Secret("default", "taken", nil)); err != nil {
		t.Fatal(err)
	}
	stale, err := lc.Get(ctx, api.KindSecret, "default", "taken")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.Patch(ctx, api.KindSecret, "default", "taken", []byte(`{"metadata":{"labels":{"a":"b"}}}`), false); err != nil {
		t.Fatal(err)
	}
	oldList, err := lc.List(ctx, api.KindSecret, "default", api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := lc.Create(ctx, testkit.Secret("default", fmt.Sprintf("filler-%d", i), nil)); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := srv.Store.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Store.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		call func(c client.Interface) error
		want error
	}{
		{"get missing", func(c client.Interface) error {
			_, err := c.Get(ctx, api.KindSecret, "default", "missing")
			return err
		}, api.ErrNotFound},
		{"unknown kind", func(c client.Interface) error {
			_, err := c.Get(ctx, "Gizmo", "default", "x")
			return err
		}, api.ErrNotFound},
		{"create without a namespace", func(c client.Interface) error {
			_, err := c.Create(ctx, testkit.Secret("", "nons", nil))
			return err
		}, api.ErrInvalid},
		{"create taken", func(c client.Interface) error {
			_, err := c.Create(ctx, testkit.Secret("default", "taken", nil))
			return err
		}, api.ErrAlreadyExists},
		{"update stale", func(c client.Interface) error {
			_, err := c.Update(ctx, stale.DeepCopy())
			return err
		}, api.ErrConflict},
		{"delete uid precondition", func(c client.Interface) error {
			_, _, err := c.Delete(ctx, api.KindSecret, "default", "taken", api.DeleteOptions{Preconditions: api.Preconditions{UID: "other"}})
			return err
		}, api.ErrConflict},
		{"invalid name", func(c client.Interface) error {
			_, err := c.Create(ctx, testkit.Secret("default", "Not_Valid", nil))
			return err
		}, api.ErrInvalid},
		{"bad selector", func(c client.Interface) error {
			_, err := c.List(ctx, api.KindSecret, "default", api.ListOptions{LabelSelector: "a in (b"})
			return err
		}, api.ErrBadRequest},
		{"watch compacted", func(c client.Interface) error {
			w, err := c.Watch(ctx, api.KindSecret, "default", api.ListOptions{ResourceVersion: oldList.ResourceVersion})
			if err != nil {
				return err
			}
			defer w.Stop()
			for range w.Events() {
			}
			return w.Err()
		}, api.ErrExpired},
	}
	for _, tt := range tests {
		for name, c := range clients {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				err := tt.call(c)
				if !errors.Is(err, tt.want) {
					t.Fatalf("err = %v (%T), want %v", err, err, tt.want.(*api.Status).Reason)
				}
				var st *api.Status
				if !errors.As(err, &st) || st.Code != tt.want.(*api.Status).Reason.Code() || st.Message == "" {
					t.Errorf("status = %+v, want code %d and a message", st, tt.want.(*api.Status).Reason.Code())
				}
			})
		}
	}
}

func TestClient_WatchStreamsChanges(t *testing.T) {
	_, clients := start(t)
	for name, c := range clients {
		t.Run(name, func(t *testing.T) {
			ctx := testkit.Context(t)
			ns := "watch-" + name
			if _, err := c.Create(ctx, testkit.Object(api.KindNamespace, "", ns)); err != nil {
				t.Fatal(err)
			}
			l, err := c.List(ctx, api.KindSecret, ns, api.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w, err := c.Watch(ctx, api.KindSecret, ns, api.ListOptions{ResourceVersion: l.ResourceVersion})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Create(ctx, testkit.Secret(ns, "w", nil)); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Patch(ctx, api.KindSecret, ns, "w", []byte(`{"metadata":{"labels":{"x":"y"}}}`), false); err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.Delete(ctx, api.KindSecret, ns, "w", api.DeleteOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for len(got) < 3 {
				select {
				case ev, ok := <-w.Events():
					if !ok {
						t.Fatalf("stream ended after %v: %v", got, w.Err())
					}
					if ev.Type == api.Bookmark {
						continue
					}
					got = append(got, ev.Type+" "+ev.Object.Name)
				case <-ctx.Done():
					t.Fatalf("timed out after %v", got)
				}
			}
			want := []string{"ADDED w", "MODIFIED w", "DELETED w"}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("events = %v, want %v", got, want)
			}
			w.Stop()
			if err := w.Err(); err != nil {
				t.Errorf("Err after Stop = %v, want nil", err)
			}
			if _, ok := <-w.Events(); ok {
				t.Error("events still open after Stop")
			}
		})
	}
}

func TestClient_ActionsBehaveAlike(t *testing.T) {
	_, clients := start(t)
	for name, c := range clients {
		t.Run(name, func(t *testing.T) {
			ctx := testkit.Context(t)
			b, err := c.Action(ctx, client.ActionRequest{Kind: "Widget", Namespace: "default", Name: "w1",
				Action: "echo", Query: map[string][]string{"x": {"1"}}, Body: []byte(`{"hello":true}`)})
			if err != nil {
				t.Fatalf("echo: %v", err)
			}
			var echo map[string]string
			if err := json.Unmarshal(b, &echo); err != nil {
				t.Fatalf("echo body %q: %v", b, err)
			}
			if echo["name"] != "w1" || echo["body"] != `{"hello":true}` || echo["x"] != "1" {
				t.Errorf("echo = %v", echo)
			}

			_, err = c.Action(ctx, client.ActionRequest{Kind: "Widget", Namespace: "default", Name: "w1",
				Action: "echo", Query: map[string][]string{"fail": {"1"}}})
			if !errors.Is(err, api.ErrConflict) {
				t.Errorf("failing action = %v, want Conflict", err)
			}
			_, err = c.Action(ctx, client.ActionRequest{Kind: "Widget", Namespace: "default", Name: "w1", Action: "nope"})
			if !errors.Is(err, api.ErrNotFound) {
				t.Errorf("unknown action = %v, want NotFound", err)
			}

			b, err = c.Action(ctx, client.ActionRequest{Method: "GET", Kind: "wd", Namespace: "team", Action: "ping"})
			if err != nil || !strings.Contains(string(b), `"namespace":"team"`) {
				t.Errorf("collection action = %q, %v", b, err)
			}

			rc, err := c.ActionStream(ctx, client.ActionRequest{Method: "GET", Kind: "Widget", Namespace: "default", Name: "w2", Action: "lines"})
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			out, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || string(out) != "w2 line 1\nw2 line 2\nw2 line 3\n" {
				t.Errorf("stream = %q, %v", out, err)
			}
		})
	}
}

func TestTyped_SecretRoundTripsOverBothClients(t *testing.T) {
	_, clients := start(t)
	for name, c := range clients {
		t.Run(name, func(t *testing.T) {
			ctx := testkit.Context(t)
			secrets := client.For[*api.Secret](c)
			if secrets.Kind() != api.KindSecret {
				t.Fatalf("Kind = %q", secrets.Kind())
			}
			in := &api.Secret{ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "typed-" + name,
				Labels: map[string]string{"app": "x"}}, StringData: map[string]string{"password": "hunter2"}}
			created, err := secrets.Create(ctx, in)
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if string(created.Data["password"]) != "hunter2" || created.StringData != nil || created.UID == "" {
				t.Errorf("created = data %v stringData %v uid %q", created.Data, created.StringData, created.UID)
			}
			got, err := secrets.Get(ctx, "default", "typed-"+name)
			if err != nil || got.Type != "Opaque" {
				t.Fatalf("get: %v type %q", err, got.Type)
			}
			got.Data["user"] = []byte("admin")
			upd, err := secrets.Update(ctx, got)
			if err != nil || string(upd.Data["user"]) != "admin" {
				t.Fatalf("update: %v", err)
			}
			patched, err := secrets.Patch(ctx, "default", "typed-"+name, []byte(`{"type":"custom"}`), false)
			if err != nil || patched.Type != "custom" {
				t.Fatalf("patch: %v type %q", err, patched.Type)
			}
			items, meta, err := secrets.List(ctx, "default", api.ListOptions{LabelSelector: "app=x"})
			if err != nil || len(items) != 1 || items[0].Name != "typed-"+name || meta.ResourceVersion == "" {
				t.Fatalf("list: %v, %d items, rv %q", err, len(items), meta.ResourceVersion)
			}
			_, gone, err := secrets.Delete(ctx, "default", "typed-"+name, api.DeleteOptions{Force: true})
			if err != nil || !gone {
				t.Fatalf("delete: %v gone %v", err, gone)
			}
			if _, err := secrets.Get(ctx, "default", "typed-"+name); !errors.Is(err, api.ErrNotFound) {
				t.Errorf("get after delete = %v, want NotFound", err)
			}
		})
	}
}

func TestLocal_ActsAsTheIdentityItIsBuiltWith(t *testing.T) {
	srv, _ := start(t)
	worker := identity.User{Name: "event:default/e1", Scope: "default/e1"}
	tests := []struct {
		name string
		as   identity.User
		want string
	}{
		{"system", identity.System(), `{"admin":true,"known":true,"name":"system:controllers"}`},
		{"non-admin", worker, `{"admin":false,"known":true,"name":"event:default/e1"}`},
		{"no identity is refused, never an admin", identity.User{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := local.New(srv.Registry, tt.as)
			// Whatever identity the caller's context carries, the client
			// acts as the one it was built with.
			ctx := identity.With(testkit.Context(t), identity.User{Name: "admin", Admin: true})
			b, err := c.Action(ctx, client.ActionRequest{Method: "GET", Kind: "Widget", Namespace: "default", Action: "whoami"})
			if tt.want == "" {
				if !errors.Is(err, api.ErrUnauthorized) {
					t.Fatalf("whoami without an identity: %s, %v; want Unauthorized", b, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("whoami: %v", err)
			}
			if string(b) != tt.want {
				t.Errorf("the registry saw %s, want %s", b, tt.want)
			}
		})
	}
}

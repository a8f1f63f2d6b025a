package client_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

// start runs a test server and returns it with an HTTP client for it.
func start(t *testing.T) (*servertest.Server, client.Interface) {
	t.Helper()
	srv := servertest.Start(t)
	return srv, srv.Client(t)
}

func TestHTTPClient_BadTokenSaysWhereTheTokenCameFrom(t *testing.T) {
	srv, _ := start(t)
	tests := []struct {
		name, token, source, want string
	}{
		{"rejected", "not-a-token", "the CAIRN_TOKEN environment variable", "rejected the token from the CAIRN_TOKEN environment variable"},
		{"missing", "", "", "none is configured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := srv.Config()
			cfg.Token, cfg.TokenSource = tt.token, tt.source
			c, err := client.NewHTTP(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Get(testkit.Context(t), api.KindSecret, "default", "x")
			if !errors.Is(err, api.ErrUnauthorized) {
				t.Fatalf("err = %v, want Unauthorized", err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), srv.URL) {
				t.Errorf("message %q lacks %q or the server URL", err.Error(), tt.want)
			}
			if tt.token != "" && strings.Contains(err.Error(), tt.token) {
				t.Errorf("message %q leaks the token", err.Error())
			}
		})
	}
}

func TestHTTPClient_ServerDownIsAClearError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close() // nothing listens there any more
	c, err := client.NewHTTP(client.Config{Server: url, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Get(testkit.Context(t), api.KindSecret, "default", "x")
	if !errors.Is(err, client.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	want := "cannot reach the cairn server at " + url
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "is `cairn server` running?") {
		t.Errorf("message %q, want it to contain %q and the hint", err.Error(), want)
	}
}

func TestHTTPClient_StoppedServerIsUnreachable(t *testing.T) {
	srv, c := start(t)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	_, err := c.List(testkit.Context(t), api.KindSecret, "", api.ListOptions{})
	if !errors.Is(err, client.ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
}

func TestHTTPClient_WatchCutByServerEndsWithError(t *testing.T) {
	srv, c := start(t)
	ctx := testkit.Context(t)
	w, err := c.Watch(ctx, api.KindSecret, "", api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	testkit.Eventually(t, 10*time.Second, "the server to count the open watch", func() bool { return srv.API.OpenWatches() > 0 })
	srv.CloseWatches()
	for range w.Events() {
	}
	if err := w.Err(); err == nil {
		t.Fatal("Err = nil after the server cut the watch, want an error")
	}
}

func TestHTTPClient_ResolvesPluralsAndShortNames(t *testing.T) {
	_, c := start(t)
	ctx := testkit.Context(t)
	if _, err := c.Create(ctx, testkit.Secret("default", "alias", nil)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		kind, ns, name string
	}{
		{api.KindSecret, "default", "alias"},
		{"secrets", "default", "alias"},
		{"secret", "default", "alias"},
		{"SECRETS", "default", "alias"},
		{"namespaces", "", "default"},
		{"ns", "", "default"},
	}
	for _, tt := range tests {
		if _, err := c.Get(ctx, tt.kind, tt.ns, tt.name); err != nil {
			t.Errorf("get with kind %q: %v", tt.kind, err)
		}
	}
	for _, kind := range []string{"gizmos", "Gizmo", "nsx"} {
		if _, err := c.Get(ctx, kind, "default", "alias"); !errors.Is(err, api.ErrNotFound) {
			t.Errorf("unknown kind %q = %v, want NotFound", kind, err)
		}
	}
}

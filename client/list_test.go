package client_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

// listRequests is a transport that counts list requests (GETs on the
// secrets collection) and runs after once the client has read and closed
// each answer.
type listRequests struct {
	base  http.RoundTripper
	n     atomic.Int64
	limit sync.Map // request number → its limit parameter
	after func(n int64)
}

func (l *listRequests) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(req)
	if err == nil && req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/secrets") && req.URL.Query().Get("watch") == "" {
		n := l.n.Add(1)
		l.limit.Store(n, req.URL.Query().Get("limit"))
		if l.after != nil {
			resp.Body = &afterClose{ReadCloser: resp.Body, after: func() { l.after(n) }}
		}
	}
	return resp, err
}

// afterClose runs after when the body is closed.
type afterClose struct {
	io.ReadCloser
	after func()
}

func (a *afterClose) Close() error {
	err := a.ReadCloser.Close()
	a.after()
	return err
}

// createMany creates n small Secrets in default through the registry.
func createMany(t *testing.T, srv *servertest.Server, n int) []string {
	t.Helper()
	ctx := identity.With(testkit.Context(t), identity.System())
	names := make([]string, n)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				names[i] = fmt.Sprintf("s%04d", i)
				if _, err := srv.Registry.Create(ctx, testkit.Secret("default", names[i], nil)); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d creates failed", failed.Load())
	}
	return names
}

func TestHTTPClient_ListWithoutLimitReadsPagesOfListChunkSize(t *testing.T) {
	srv := servertest.Start(t)
	const n = 2*client.ListChunkSize + 7
	want := createMany(t, srv, n)
	tests := []struct {
		name    string
		compact bool // the store compacts the list's revision after the first page
		pages   int64
	}{
		{"pages of one snapshot", false, 3},
		{"continue token expired: read again in one request", true, 3}, // page, 410, whole list
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := &listRequests{base: srv.Transport()}
			if tc.compact {
				tr.after = func(n int64) {
					if n != 1 {
						return
					}
					// A write, then a compaction up to it: the first
					// page's revision is gone.
					ctx := identity.With(context.Background(), identity.System())
					if _, err := srv.Registry.Create(ctx, testkit.Secret("default", "zz-late", nil)); err != nil {
						t.Error(err)
					}
					rev, err := srv.Store.Revision(ctx)
					if err == nil {
						err = srv.Store.Compact(ctx, rev)
					}
					if err != nil {
						t.Error(err)
					}
				}
			}
			c, err := client.NewHTTP(client.Config{Server: srv.URL, Token: srv.Token, HTTPClient: &http.Client{Transport: tr}})
			if err != nil {
				t.Fatal(err)
			}
			l, err := c.List(testkit.Context(t), api.KindSecret, "default", api.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range l.Items {
				got = append(got, o.Name)
			}
			wantNow := want
			if tc.compact {
				wantNow = append(slices.Clone(want), "zz-late")
			}
			if !slices.Equal(got, wantNow) || l.Continue != "" || l.ResourceVersion == "" {
				t.Fatalf("list of %d items (continue %q, resourceVersion %q), want the %d in order, no continue",
					len(got), l.Continue, l.ResourceVersion, len(wantNow))
			}
			if got := tr.n.Load(); got != tc.pages {
				t.Fatalf("%d list requests, want %d", got, tc.pages)
			}
			if lim, _ := tr.limit.Load(int64(1)); lim != fmt.Sprint(client.ListChunkSize) {
				t.Fatalf("the first request asked for limit %q, want %d", lim, client.ListChunkSize)
			}
			if lim, _ := tr.limit.Load(tc.pages); tc.compact && lim != "" {
				t.Fatalf("the list read again asked for limit %q, want none", lim)
			}
		})
	}
}

package server_test

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

func TestAuth_EveryEndpointButProbesNeedsAValidToken(t *testing.T) {
	s := servertest.Start(t)
	anon := newClient(t, s).as("")
	bad := newClient(t, s).as("not-a-token")
	for _, p := range []string{base, path("namespaces"), nsPath("default", "secrets"), "/metrics", "/nowhere"} {
		for name, c := range map[string]*client{"no token": anon, "bad token": bad} {
			r := c.do("GET", p, nil).expect(t, http.StatusUnauthorized)
			if st := r.status(t); st.Reason != api.ReasonUnauthorized {
				t.Errorf("%s %s: reason %s", name, p, st.Reason)
			}
			if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s: no WWW-Authenticate challenge", name, p)
			}
		}
	}
	// A malformed header is no token.
	anon.do("GET", base, nil, "Authorization", "Basic "+s.Token).expect(t, http.StatusUnauthorized)
	// The scheme is case-insensitive (RFC 7235).
	anon.do("GET", base, nil, "Authorization", "bearer "+s.Token).expect(t, http.StatusOK)
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := anon.do("GET", p, nil).expect(t, http.StatusOK); strings.TrimSpace(string(r.body)) != "ok" {
			t.Errorf("%s: %q", p, r.body)
		}
	}
	newClient(t, s).do("GET", "/nowhere", nil).expect(t, http.StatusNotFound)
}

func TestReadyz_FailsWhenTheStoreIsGone(t *testing.T) {
	s1 := servertest.Start(t)
	c := newClient(t, s1)
	c.do("GET", "/readyz", nil).expect(t, http.StatusOK)
	// With its etcd client closed, the store no longer answers.
	if err := s1.Store.Client().Close(); err != nil {
		t.Fatal(err)
	}
	r := c.as("").do("GET", "/readyz", nil).expect(t, http.StatusServiceUnavailable)
	if st := r.status(t); st.Reason != api.ReasonUnavailable {
		t.Fatalf("readyz: reason %s", st.Reason)
	}
	c.as("").do("GET", "/healthz", nil).expect(t, http.StatusOK)
}

func TestDiscovery_ListsKindsWithSubresourcesAndActions(t *testing.T) {
	s := startWithWidgets(t, newWidgetHooks())
	var d api.Discovery
	r := newClient(t, s).do("GET", base, nil, "Accept", api.KindListMediaType).expect(t, http.StatusOK)
	if ct := r.header.Get("Content-Type"); ct != api.KindListMediaType {
		t.Fatalf("Content-Type %q, want %q", ct, api.KindListMediaType)
	}
	if err := jsonUnmarshal(r.body, &d); err != nil {
		t.Fatal(err)
	}
	byKind := map[string]api.KindInfo{}
	for _, k := range d.Kinds {
		byKind[k.Kind] = k
	}
	w, ok := byKind["Widget"]
	if !ok || byKind["Secret"].Plural != "secrets" || !w.Namespaced || byKind["Namespace"].Namespaced {
		t.Fatalf("discovery: %s", r.body)
	}
	for _, sub := range []string{"status", "poke", "logs"} {
		if !contains(w.Subresources, sub) {
			t.Errorf("widget subresources %v lack %q", w.Subresources, sub)
		}
	}
}

func TestRoutes_UnknownPathsAndWrongMethods(t *testing.T) {
	s := startWithWidgets(t, newWidgetHooks())
	c := newClient(t, s)
	c.do("POST", nsPath("default", "widgets"), testkit.Widget("default", "w", testkit.Spec(`{"size":1}`))).expect(t, http.StatusCreated)
	cases := []struct {
		method, path string
		code         int
	}{
		{"GET", nsPath("default", "gadgets"), http.StatusNotFound},
		{"GET", path("gadgets"), http.StatusNotFound},
		{"GET", nsPath("default", "Secret"), http.StatusNotFound}, // plurals only in URLs
		{"GET", path("secrets", "x"), http.StatusNotFound},        // namespaced kind outside a namespace
		{"GET", nsPath("default", "widgets", "w", "nothing"), http.StatusNotFound},
		{"GET", nsPath("default", "widgets", "w", "status", "x"), http.StatusNotFound},
		{"GET", base + "//x", http.StatusBadRequest}, // an empty segment is refused, never routed
		{"POST", path("secrets"), http.StatusMethodNotAllowed},
		{"DELETE", path("secrets"), http.StatusMethodNotAllowed}, // a collection is deleted in one namespace
		{"POST", nsPath("default", "secrets", "x"), http.StatusMethodNotAllowed},
		{"DELETE", nsPath("default", "widgets", "w", "status"), http.StatusMethodNotAllowed},
		{"GET", nsPath("default", "widgets", "w", "poke"), http.StatusMethodNotAllowed},
		{"PUT", base, http.StatusMethodNotAllowed},
	}
	for _, tc := range cases {
		r := c.do(tc.method, tc.path, nil)
		if r.code != tc.code {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, r.code, r.body, tc.code)
			continue
		}
		if st := r.status(t); st.Code != tc.code {
			t.Errorf("%s %s: status code %d in body", tc.method, tc.path, st.Code)
		}
	}
}

func TestActions_RoutedFromTheKindWithTheCaller(t *testing.T) {
	h := newWidgetHooks()
	s := startWithWidgets(t, h)
	c := newClient(t, s)
	c.do("POST", nsPath("default", "widgets"), testkit.Widget("default", "w", testkit.Spec(`{"size":1}`))).expect(t, http.StatusCreated)

	var got map[string]string
	r := c.do("POST", nsPath("default", "widgets", "w", "poke")+"?x=1", "hello").expect(t, http.StatusOK)
	if err := jsonUnmarshal(r.body, &got); err != nil || got["name"] != "w" || got["namespace"] != "default" ||
		got["x"] != "1" || got["body"] != "hello" || got["caller"] != "admin" {
		t.Fatalf("object action: %s", r.body)
	}
	// A collection action is chosen by method; GET of that name is an object.
	r = c.do("POST", nsPath("default", "widgets", "cancel"), nil).expect(t, http.StatusCreated)
	if err := jsonUnmarshal(r.body, &got); err != nil || got["name"] != "" {
		t.Fatalf("collection action: %s", r.body)
	}
	c.do("GET", nsPath("default", "widgets", "cancel"), nil).expect(t, http.StatusNotFound)
	// DELETE on the collection is the kind's unnamed collection action.
	c.do("DELETE", nsPath("default", "widgets"), nil).expect(t, http.StatusBadRequest)
	c.do("DELETE", nsPath("default", "widgets")+"?phase=DONE", nil).expect(t, http.StatusOK)
	// The caller is the token's identity.
	r = c.as(s.NewToken(t, identityUser("bob"))).do("POST", nsPath("default", "widgets", "w", "poke"), nil).expect(t, http.StatusOK)
	if err := jsonUnmarshal(r.body, &got); err != nil || got["caller"] != "bob" {
		t.Fatalf("caller: %s", r.body)
	}
}

func TestActions_StreamIsFlushedAsWritten(t *testing.T) {
	h := newWidgetHooks()
	s := startWithWidgets(t, h)
	req, _ := http.NewRequest("GET", s.URL+nsPath("default", "widgets", "w", "logs"), nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	// The first line arrives while the action still blocks: it was flushed.
	line, err := br.ReadString('\n')
	if err != nil || line != "line 1 of w\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	close(h.release)
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "line 2\n" {
		t.Fatalf("rest %q, %v", rest, err)
	}
}

func TestServe_ShutdownDrainsRequestsAndEndsStreams(t *testing.T) {
	h := newWidgetHooks()
	s := startWithWidgets(t, h)
	c := newClient(t, s)

	watch := openWatch(t, s, nsPath("default", "secrets")+"?watch=true")
	logs := openStream(t, s, nsPath("default", "widgets", "w", "logs"))
	<-h.started
	slow := make(chan reply, 1)
	go func() { slow <- c.do("GET", nsPath("default", "widgets", "w", "slow"), nil) }()
	<-h.started

	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop() }()
	// Streams end cleanly (EOF, not a cut) while the slow request drains.
	if ev, err := watch.next(); err != io.EOF {
		t.Fatalf("watch after shutdown: %+v, %v; want EOF", ev, err)
	}
	if _, err := io.ReadAll(logs); err != nil {
		t.Fatalf("log stream after shutdown: %v", err)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) before the in-flight request finished", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(h.release)
	if r := <-slow; r.code != http.StatusOK {
		t.Fatalf("in-flight request: %d %s", r.code, r.body)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := http.Get(s.URL + "/healthz"); err == nil {
		t.Fatal("the server still accepts connections after Stop")
	}
}

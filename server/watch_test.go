package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// openStream starts a GET (with headers, name and value pairs) and
// returns its body once the headers say 200. The request gives up after
// 30s so a missing event fails instead of hanging.
func openStream(t testing.TB, s *servertest.Server, p string, headers ...string) io.ReadCloser {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+p, nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", p, resp.StatusCode, b)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp.Body
}

type watchStream struct {
	dec *json.Decoder
}

type event struct {
	Type   string
	Object *api.Object
	Raw    json.RawMessage
}

func openWatch(t testing.TB, s *servertest.Server, p string) *watchStream {
	t.Helper()
	return &watchStream{dec: json.NewDecoder(openStream(t, s, p))}
}

// next reads one event; io.EOF when the stream ended cleanly.
func (w *watchStream) next() (event, error) {
	var we api.WatchEvent
	if err := w.dec.Decode(&we); err != nil {
		return event{}, err
	}
	ev := event{Type: we.Type, Raw: we.Object, Object: &api.Object{}}
	return ev, json.Unmarshal(we.Object, ev.Object)
}

// nextChange reads events, skipping bookmarks, until a change arrives.
func (w *watchStream) nextChange(t testing.TB) event {
	t.Helper()
	for {
		ev, err := w.next()
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		if ev.Type != api.Bookmark {
			return ev
		}
	}
}

// expectChanges reads len(want) changes, each "TYPE name".
func (w *watchStream) expectChanges(t testing.TB, want ...string) []event {
	t.Helper()
	var out []event
	for _, wnt := range want {
		ev := w.nextChange(t)
		if got := ev.Type + " " + ev.Object.Name; got != wnt {
			t.Fatalf("event %q, want %q", got, wnt)
		}
		out = append(out, ev)
	}
	return out
}

func TestWatch_StreamsChangesAndResumesFromResourceVersion(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	c.do("POST", coll, testkit.Secret("default", "a", nil)).expect(t, http.StatusCreated)

	w := openWatch(t, s, coll+"?watch=true")
	w.expectChanges(t, "ADDED a")
	c.do("POST", coll, testkit.Secret("default", "b", nil)).expect(t, http.StatusCreated)
	c.do("PATCH", coll+"/a", `{"metadata":{"labels":{"x":"1"}}}`, "Content-Type", "application/merge-patch+json").expect(t, http.StatusOK)
	seen := w.expectChanges(t, "ADDED b", "MODIFIED a")
	last := seen[len(seen)-1].Object.ResourceVersion

	// Changes made while nobody watches are replayed from the last version
	// seen, each once, in order.
	c.do("POST", coll, testkit.Secret("default", "c", nil)).expect(t, http.StatusCreated)
	c.do("DELETE", coll+"/b?force=true", nil).expect(t, http.StatusOK)
	w2 := openWatch(t, s, coll+"?watch=true&resourceVersion="+last)
	got := w2.expectChanges(t, "ADDED c", "DELETED b")
	if r1, _ := strconv.Atoi(got[0].Object.ResourceVersion); r1 <= mustAtoi(t, last) {
		t.Fatalf("replayed event at %d is not after %s", r1, last)
	}
	// A watch across namespaces and one for a cluster-scoped kind.
	all := openWatch(t, s, path("secrets")+"?watch=1&resourceVersion="+last)
	all.expectChanges(t, "ADDED c", "DELETED b")
	ns := openWatch(t, s, path("namespaces")+"?watch=true")
	ns.expectChanges(t, "ADDED default")
}

func mustAtoi(t testing.TB, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestWatch_ResumeAfterACutConnectionLosesAndRepeatsNothing(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	w := openWatch(t, s, coll+"?watch=true")
	c.do("POST", coll, testkit.Secret("default", "a", nil)).expect(t, http.StatusCreated)
	last := w.expectChanges(t, "ADDED a")[0].Object.ResourceVersion

	s.CloseWatches()
	// The client sees the connection drop, not a clean end of stream.
	for {
		ev, err := w.next()
		if err == nil && ev.Type == api.Bookmark {
			continue
		}
		if err == nil || errors.Is(err, io.EOF) {
			t.Fatalf("after the cut: event %+v, err %v; want a broken connection", ev, err)
		}
		break
	}
	if n := s.API.OpenWatches(); n != 0 {
		t.Fatalf("%d watches still open after the cut", n)
	}
	for _, name := range []string{"b", "c"} {
		c.do("POST", coll, testkit.Secret("default", name, nil)).expect(t, http.StatusCreated)
	}
	w = openWatch(t, s, coll+"?watch=true&resourceVersion="+last)
	w.expectChanges(t, "ADDED b", "ADDED c")
	c.do("POST", coll, testkit.Secret("default", "d", nil)).expect(t, http.StatusCreated)
	w.expectChanges(t, "ADDED d") // not a repeat of b or c
}

func TestWatch_CompactedResourceVersionIsGoneBeforeStreaming(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	old := c.do("POST", coll, testkit.Secret("default", "a", nil)).expect(t, http.StatusCreated).object(t).ResourceVersion
	c.do("POST", coll, testkit.Secret("default", "b", nil)).expect(t, http.StatusCreated)
	if err := s.Store.Compact(context.Background(), revision(t, s)); err != nil {
		t.Fatal(err)
	}
	r := c.do("GET", coll+"?watch=true&resourceVersion="+old, nil).expect(t, http.StatusGone)
	if st := r.status(t); st.Reason != api.ReasonExpired {
		t.Fatalf("reason %s", st.Reason)
	}
	// An expired continue token is Gone too.
	first := c.do("GET", coll+"?limit=1", nil).expect(t, http.StatusOK).list(t)
	c.do("POST", coll, testkit.Secret("default", "c", nil)).expect(t, http.StatusCreated)
	if err := s.Store.Compact(context.Background(), revision(t, s)); err != nil {
		t.Fatal(err)
	}
	c.do("GET", coll+"?limit=1&continue="+first.Continue, nil).expect(t, http.StatusGone)
}

func TestWatch_LabelSelectorFiltersAndBookmarksArrive(t *testing.T) {
	s := servertest.Start(t, servertest.WithBookmarkInterval(50*time.Millisecond))
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	w := openWatch(t, s, coll+"?watch=true&allowWatchBookmarks=true&labelSelector=app%3Dweb")
	plain := testkit.Secret("default", "plain", nil)
	web := testkit.Secret("default", "web", nil, testkit.Labels("app", "web"))
	c.do("POST", coll, plain).expect(t, http.StatusCreated)
	rv := c.do("POST", coll, web).expect(t, http.StatusCreated).object(t).ResourceVersion
	w.expectChanges(t, "ADDED web")
	for {
		ev, err := w.next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != api.Bookmark {
			t.Fatalf("unexpected %s %s", ev.Type, ev.Object.Name)
		}
		if mustAtoi(t, ev.Object.ResourceVersion) >= mustAtoi(t, rv) {
			break // a bookmark covering everything written
		}
	}
}

func TestWatch_BadParametersAre400NamingTheParameter(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	for _, tc := range []struct{ query, param string }{
		{"watch=maybe", "watch"},
		{"watch=true&resourceVersion=abc", "resourceVersion"},
		{"watch=true&resourceVersion=-3", "resourceVersion"},
		{"watch=true&labelSelector=a%20in%20(", "labelSelector"},
	} {
		r := c.do("GET", nsPath("default", "secrets")+"?"+tc.query, nil).expect(t, http.StatusBadRequest)
		if st := r.status(t); st.Reason != api.ReasonBadRequest || !strings.Contains(st.Message, tc.param) {
			t.Errorf("%s: %+v, want a BadRequest naming %s", tc.query, st, tc.param)
		}
	}
}

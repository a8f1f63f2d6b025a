package server_test

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

// Lists and watches as Kubernetes clients use them: field selectors,
// bookmarks only when allowed, the watch-list protocol, timeoutSeconds.

func itemKeys(l *api.List) []string {
	var out []string
	for _, o := range l.Items {
		out = append(out, o.Namespace+"/"+o.Name)
	}
	return out
}

func TestList_FieldSelectorOnNameAndNamespace(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	c.do("POST", api.BasePath+"/namespaces", testkit.Object(api.KindNamespace, "", "other")).expect(t, http.StatusCreated)
	for _, o := range []*api.Object{testkit.Secret("default", "a", nil), testkit.Secret("default", "b", nil), testkit.Secret("other", "a", nil)} {
		c.do("POST", nsPath(o.Namespace, "secrets"), o).expect(t, http.StatusCreated)
	}
	for _, tc := range []struct {
		path string
		want []string
	}{
		{nsPath("default", "secrets") + "?fieldSelector=metadata.name%3Da", []string{"default/a"}},
		{nsPath("default", "secrets") + "?fieldSelector=metadata.name%21%3Da", []string{"default/b"}},
		{api.BasePath + "/secrets?fieldSelector=metadata.name%3D%3Da", []string{"default/a", "other/a"}},
		{api.BasePath + "/secrets?fieldSelector=metadata.namespace%3Dother", []string{"other/a"}},
		{api.BasePath + "/secrets?fieldSelector=metadata.namespace%3Dother,metadata.name%3Db", nil},
		{api.BasePath + "/secrets?fieldSelector=metadata.name%3Da&limit=1", []string{"default/a"}},
	} {
		got := itemKeys(c.do("GET", tc.path, nil).expect(t, http.StatusOK).list(t))
		if !slices.Equal(got, tc.want) {
			t.Errorf("GET %s = %v, want %v", tc.path, got, tc.want)
		}
	}
	st := c.do("GET", nsPath("default", "secrets")+"?fieldSelector=status.phase%3DRunning", nil).expect(t, http.StatusBadRequest).status(t)
	if st.Details == nil || len(st.Details.Causes) == 0 || st.Details.Causes[0].Field != "fieldSelector" {
		t.Fatalf("an unsupported field is not named: %+v", st)
	}
}

func TestWatch_FieldSelectorSeesOnlyItsObject(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	w := openWatch(t, s, coll+"?watch=true&fieldSelector=metadata.name%3Dmine")
	c.do("POST", coll, testkit.Secret("default", "other", nil)).expect(t, http.StatusCreated)
	c.do("POST", coll, testkit.Secret("default", "mine", nil)).expect(t, http.StatusCreated)
	c.do("DELETE", coll+"/other?force=true", nil).expect(t, http.StatusOK)
	c.do("DELETE", coll+"/mine?force=true", nil).expect(t, http.StatusOK)
	w.expectChanges(t, "ADDED mine", "DELETED mine")
}

func TestWatch_BookmarksOnlyWhenAllowed(t *testing.T) {
	s := servertest.Start(t, servertest.WithBookmarkInterval(20*time.Millisecond))
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	c.do("POST", coll, testkit.Secret("default", "a", nil)).expect(t, http.StatusCreated)
	rv := c.do("GET", coll, nil).expect(t, http.StatusOK).list(t).ResourceVersion
	// Without allowWatchBookmarks, for a second (about fifty bookmark
	// intervals), nothing but the one change comes.
	w := openWatch(t, s, coll+"?watch=true&timeoutSeconds=1&resourceVersion="+rv)
	c.do("POST", coll, testkit.Secret("default", "b", nil)).expect(t, http.StatusCreated)
	var got []string
	for {
		ev, err := w.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Type+" "+ev.Object.Name)
	}
	if !slices.Equal(got, []string{"ADDED b"}) {
		t.Fatalf("events without allowWatchBookmarks: %v, want only ADDED b", got)
	}
	// With it, bookmarks come.
	w = openWatch(t, s, coll+"?watch=true&allowWatchBookmarks=true&resourceVersion="+rv)
	for {
		ev, err := w.next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == api.Bookmark {
			break
		}
	}
}

func TestWatch_TimeoutSecondsEndsTheStreamCleanly(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	start := time.Now()
	w := openWatch(t, s, coll+"?watch=true&timeoutSeconds=1")
	if _, err := w.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after timeoutSeconds: %v, want a clean end (EOF)", err)
	}
	if time.Since(start) < time.Second {
		t.Fatalf("the stream ended before its timeout")
	}
	c.do("GET", coll+"?watch=true&timeoutSeconds=-1", nil).expect(t, http.StatusBadRequest)
}

func TestWatch_SendInitialEventsEndsWithTheAnnotatedBookmark(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	for _, n := range []string{"a", "b"} {
		c.do("POST", coll, testkit.Secret("default", n, nil)).expect(t, http.StatusCreated)
	}
	w := openWatch(t, s, coll+"?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
	var added []string
	for {
		ev, err := w.next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == api.Added {
			added = append(added, ev.Object.Name)
			continue
		}
		if ev.Type != api.Bookmark || ev.Object.Annotations[api.InitialEventsEndAnnotation] != "true" {
			t.Fatalf("%s %s before the end of the initial events", ev.Type, ev.Object.Name)
		}
		if ev.Object.Kind != "Secret" || ev.Object.APIVersion != api.APIVersion || ev.Object.ResourceVersion == "" {
			t.Fatalf("the end bookmark lacks its kind or version: %+v", ev.Object)
		}
		break
	}
	if !slices.Equal(added, []string{"a", "b"}) {
		t.Fatalf("initial events %v, want a and b", added)
	}
	c.do("POST", coll, testkit.Secret("default", "c", nil)).expect(t, http.StatusCreated)
	w.expectChanges(t, "ADDED c")
	// The end is a bookmark: a client that does not allow them is refused.
	c.do("GET", coll+"?watch=true&sendInitialEvents=true", nil).expect(t, http.StatusBadRequest)
}

func TestWatch_SendInitialEventsFalseStartsFromNow(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	c.do("POST", coll, testkit.Secret("default", "old", nil)).expect(t, http.StatusCreated)
	w := openWatch(t, s, coll+"?watch=true&sendInitialEvents=false")
	c.do("POST", coll, testkit.Secret("default", "new", nil)).expect(t, http.StatusCreated)
	w.expectChanges(t, "ADDED new")
}

func TestList_ResourceVersionMatchExactReadsThePast(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	c.do("POST", coll, testkit.Secret("default", "a", nil)).expect(t, http.StatusCreated)
	rv := c.do("GET", coll, nil).expect(t, http.StatusOK).list(t).ResourceVersion
	c.do("POST", coll, testkit.Secret("default", "b", nil)).expect(t, http.StatusCreated)
	l := c.do("GET", coll+"?resourceVersion="+rv+"&resourceVersionMatch=Exact", nil).expect(t, http.StatusOK).list(t)
	if got := itemKeys(l); !slices.Equal(got, []string{"default/a"}) || l.ResourceVersion != rv {
		t.Fatalf("exact list at %s: %v at %s", rv, got, l.ResourceVersion)
	}
	if got := itemKeys(c.do("GET", coll+"?resourceVersion="+rv+"&resourceVersionMatch=NotOlderThan", nil).expect(t, http.StatusOK).list(t)); len(got) != 2 {
		t.Fatalf("not-older-than list: %v, want both", got)
	}
	c.do("GET", coll+"?resourceVersionMatch=Exact", nil).expect(t, http.StatusBadRequest)
	c.do("GET", coll+"?resourceVersion=1&resourceVersionMatch=Newest", nil).expect(t, http.StatusBadRequest)
}

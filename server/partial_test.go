package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

// The Accept headers of client-go's metadata client.
const (
	partialAccept     = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	partialListAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)

// partial decodes raw as a PartialObjectMetadata and checks that it is one
// and holds nothing else.
func partial(t *testing.T, raw []byte) metav1.PartialObjectMetadata {
	t.Helper()
	var m metav1.PartialObjectMetadata
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || json.Unmarshal(raw, &fields) != nil {
		t.Fatalf("not a PartialObjectMetadata: %v: %s", err, raw)
	}
	if m.Kind != "PartialObjectMetadata" || m.APIVersion != "meta.k8s.io/v1" || len(fields) != 3 {
		t.Fatalf("%s, want a PartialObjectMetadata with its metadata alone", raw)
	}
	return m
}

func TestPartial_ReadsAnswerMetadataOnlyWhenAsked(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	c.do("POST", coll, testkit.Secret("default", "db", map[string]string{"password": "hunter2"})).expect(t, http.StatusCreated)

	r := c.do("GET", nsPath("default", "secrets", "db"), nil, "Accept", partialAccept).expect(t, http.StatusOK)
	if ct := r.header.Get("Content-Type"); ct != "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1" {
		t.Errorf("Content-Type %q", ct)
	}
	if m := partial(t, r.body); m.Name != "db" || m.Namespace != "default" || m.UID == "" || m.ResourceVersion == "" {
		t.Errorf("get: %+v", m)
	}

	r = c.do("GET", coll, nil, "Accept", partialListAccept).expect(t, http.StatusOK)
	var l struct {
		metav1.TypeMeta
		Metadata metav1.ListMeta
		Items    []json.RawMessage
	}
	if err := json.Unmarshal(r.body, &l); err != nil || l.Kind != "PartialObjectMetadataList" || l.APIVersion != "meta.k8s.io/v1" ||
		len(l.Items) != 1 || l.Metadata.ResourceVersion == "" {
		t.Fatalf("list: %v: %s", err, r.body)
	}
	if m := partial(t, l.Items[0]); m.Name != "db" {
		t.Errorf("list item %+v", m)
	}
	if strings.Contains(string(r.body), "aHVudGVyMg") {
		t.Error("a secret value is in the metadata")
	}

	// Plain JSON and Tables are as before.
	if o := c.do("GET", nsPath("default", "secrets", "db"), nil).expect(t, http.StatusOK).object(t); o.Kind != "Secret" {
		t.Errorf("plain JSON got %q", o.Kind)
	}
	decodeTable(t, c.do("GET", coll, nil, "Accept", tableAccept).expect(t, http.StatusOK).body)
}

func TestPartial_WatchSendsEveryEventAsMetadata(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	coll := nsPath("default", "secrets")
	dec := json.NewDecoder(openStream(t, s, coll+"?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
		"Accept", partialAccept))
	next := func() (string, metav1.PartialObjectMetadata) {
		t.Helper()
		var ev struct {
			Type   string
			Object json.RawMessage
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		return ev.Type, partial(t, ev.Object)
	}
	// The initial events end with a BOOKMARK, itself metadata.
	if typ, m := next(); typ != api.Bookmark || m.Annotations[api.InitialEventsEndAnnotation] != "true" || m.ResourceVersion == "" {
		t.Fatalf("%s %+v, want the bookmark ending the initial events", typ, m)
	}
	c.do("POST", coll, testkit.Secret("default", "w", nil)).expect(t, http.StatusCreated)
	if typ, m := next(); typ != api.Added || m.Name != "w" {
		t.Fatalf("%s %+v", typ, m)
	}
}

package usage

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/storetest"
)

// declared reads {"spec":{"objects":N}} as the limits a Namespace declares.
func declared(value []byte) (Limits, error) {
	var v struct {
		Spec struct {
			Objects *int64 `json:"objects"`
		} `json:"spec"`
	}
	l := Limits{Objects: Unset, Bytes: Unset}
	if err := json.Unmarshal(value, &v); err != nil {
		return l, err
	}
	if v.Spec.Objects != nil {
		l.Objects = *v.Spec.Objects
	}
	return l, nil
}

func put(t *testing.T, s *store.Store, key string, size int) {
	t.Helper()
	if _, err := s.Txn(context.Background(), nil, store.Put(key, make([]byte, size))); err != nil {
		t.Fatal(err)
	}
}

func TestTracker_ListsInPagesThenFollowsOtherWritersThroughTheWatch(t *testing.T) {
	s, _ := storetest.Start(t)
	ctx := context.Background()
	for _, ns := range []string{"a", "b"} {
		if _, err := s.Txn(ctx, nil, store.Put(nsPrefix+ns, []byte(`{"spec":{"objects":70}}`))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 60 {
		put(t, s, key("a", fmt.Sprintf("w%02d", i)), 100+i)
		put(t, s, prefix+"secrets/b/"+fmt.Sprintf("s%02d", i), 10)
	}
	put(t, s, prefix+"leases/cluster-wide", 1000)
	tr := New(s, Options{Prefix: prefix, NamespacePrefix: nsPrefix, Defaults: Limits{Objects: 1000, Bytes: Unset},
		ParseLimits: declared, PageBytes: 1000}) // pages of 16 keys
	t.Cleanup(tr.Close)
	if err := tr.Start(ctx); err != nil {
		t.Fatal(err)
	}
	wantA := int64(0)
	for i := range 60 {
		wantA += int64(100 + i)
	}
	if r := tr.Usage("a"); r.Objects != 60 || r.Bytes != wantA || r.Limits.Objects != 70 {
		t.Fatalf("namespace a after the list: %+v, want 60 objects, %d bytes, limit 70", r, wantA)
	}
	if r := tr.Usage("b"); r.Objects != 60 || r.Bytes != 600 {
		t.Fatalf("namespace b after the list: %+v", r)
	}
	// Another server writes: a delete, an update, a create, new limits.
	if _, err := s.Txn(ctx, nil, store.Del(key("a", "w00")), store.Put(key("a", "w01"), make([]byte, 1)),
		store.Put(key("c", "new"), make([]byte, 7)), store.Put(nsPrefix+"b", []byte(`{"spec":{"objects":3}}`))); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		a, b, c := tr.Usage("a"), tr.Usage("b"), tr.Usage("c")
		if a.Objects == 59 && a.Bytes == wantA-100-101+1 && b.Limits.Objects == 3 && c.Objects == 1 && c.Bytes == 7 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watch did not deliver the other server's writes: a %+v, b %+v, c %+v", a, b, c)
		}
	}
	if _, err := tr.Reserve([]Change{{Key: prefix + "secrets/b/more", Size: 1}}); err == nil {
		t.Fatal("a create in b, over its new limit of 3, was not refused")
	}
}

func TestTracker_CloseStopsTheWatchAndStartThenFails(t *testing.T) {
	s, _ := storetest.Start(t)
	tr := New(s, Options{Prefix: prefix, NamespacePrefix: nsPrefix, ParseLimits: declared})
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { tr.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	if err := New(s, Options{}).startClosed(); err != ErrClosed {
		t.Fatalf("Start after Close: %v, want ErrClosed", err)
	}
}

// startClosed closes a fresh tracker and starts it.
func (t *Tracker) startClosed() error {
	t.Close()
	return t.Start(context.Background())
}

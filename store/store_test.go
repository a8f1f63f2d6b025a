package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/storetest"
)

func TestTxn_CompareAndSwapRejectsStaleRevision(t *testing.T) {
	s, _ := storetest.Start(t)
	ctx := context.Background()
	rev, err := s.Txn(ctx, []store.Cond{store.Absent("/k")}, store.Put("/k", []byte("a")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn(ctx, []store.Cond{store.Absent("/k")}, store.Put("/k", []byte("b"))); !errors.Is(err, store.ErrPrecondition) {
		t.Fatalf("second create: got %v, want ErrPrecondition", err)
	}
	rev2, err := s.Txn(ctx, []store.Cond{store.Unchanged("/k", rev)}, store.Put("/k", []byte("c")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn(ctx, []store.Cond{store.Unchanged("/k", rev)}, store.Put("/k", []byte("d"))); !errors.Is(err, store.ErrPrecondition) {
		t.Fatalf("stale update: got %v, want ErrPrecondition", err)
	}
	kv, err := s.Get(ctx, "/k")
	if err != nil || string(kv.Value) != "c" || kv.ModRevision != rev2 {
		t.Fatalf("get: %+v %v", kv, err)
	}
}

func TestList_PagesAtOneRevision(t *testing.T) {
	s, _ := storetest.Start(t)
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		if _, err := s.Txn(ctx, nil, store.Put("/p/"+k, []byte(k))); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.List(ctx, "/p/", store.ListOptions{Limit: 2})
	if err != nil || len(page.KVs) != 2 || !page.More {
		t.Fatalf("page1: %+v %v", page, err)
	}
	// A write after the first page must not show in later pages.
	if _, err := s.Txn(ctx, nil, store.Put("/p/f", nil)); err != nil {
		t.Fatal(err)
	}
	rest, err := s.List(ctx, "/p/", store.ListOptions{Revision: page.Revision, From: page.KVs[1].Key + "\x00"})
	if err != nil || len(rest.KVs) != 3 || rest.More {
		t.Fatalf("rest: %+v %v", rest, err)
	}
}

func TestWatch_ResumesFromRevisionAndReportsCompaction(t *testing.T) {
	s, _ := storetest.Start(t)
	ctx := context.Background()
	var revs []int64
	for i := 0; i < 3; i++ {
		rev, err := s.Txn(ctx, nil, store.Put("/w/x", []byte{byte('0' + i)}))
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, rev)
	}
	w := s.Watch(ctx, "/w/", revs[1])
	for _, want := range revs[1:] {
		select {
		case ev := <-w.Events():
			if ev.Revision != want || ev.Prev == nil {
				t.Fatalf("event %+v, want revision %d with prev", ev, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
	}
	w.Close()
	if err := s.Compact(ctx, revs[2]); err != nil {
		t.Fatal(err)
	}
	w = s.Watch(ctx, "/w/", revs[0])
	defer w.Close()
	for range w.Events() {
	}
	if err := w.Err(); !errors.Is(err, store.ErrCompacted) {
		t.Fatalf("watch from compacted revision: %v", err)
	}
}

// TestErrors_ClassifiedIntoDeclaredErrors: a transaction whose deadline
// passes fails with ErrTimeout (its outcome unknown), a read with
// ErrUnavailable (it changed nothing), and any call on a closed client
// with ErrUnavailable, so that callers can answer 504 and 503 without
// looking at etcd's errors.
func TestErrors_ClassifiedIntoDeclaredErrors(t *testing.T) {
	s, _ := storetest.Start(t)
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := s.Get(expired, "/k"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("get past its deadline: %v, want ErrUnavailable", err)
	}
	if _, err := s.Txn(expired, nil, store.Put("/k", nil)); !errors.Is(err, store.ErrTimeout) {
		t.Errorf("txn past its deadline: %v, want ErrTimeout", err)
	}
	if err := s.Client().Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Get(ctx, "/k"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("get on a closed client: %v, want ErrUnavailable", err)
	}
	if _, err := s.List(ctx, "/", store.ListOptions{}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("list on a closed client: %v, want ErrUnavailable", err)
	}
	if _, err := s.Txn(ctx, nil, store.Put("/k", nil)); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("txn on a closed client: %v, want ErrUnavailable", err)
	}
}

package store_test

import (
	"context"
	"testing"
	"time"

	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/storetest"
)

func TestWatchNoPrev_DeliversEveryChangeWithoutPreviousVersions(t *testing.T) {
	s, _ := storetest.Start(t)
	ctx := context.Background()
	first, err := s.Txn(ctx, nil, store.Put("/n/x", []byte("a")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn(ctx, nil, store.Put("/n/x", []byte("bb"))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn(ctx, nil, store.Del("/n/x")); err != nil {
		t.Fatal(err)
	}
	w := s.WatchNoPrev(ctx, "/n/", first)
	defer w.Close()
	want := []struct {
		typ   store.EventType
		value string
	}{{store.EventPut, "a"}, {store.EventPut, "bb"}, {store.EventDelete, ""}}
	for i, wt := range want {
		select {
		case ev := <-w.Events():
			if ev.Type != wt.typ || string(ev.KV.Value) != wt.value || ev.Revision != first+int64(i) || ev.Prev != nil {
				t.Fatalf("event %d: %+v (prev %+v), want type %v value %q at %d without prev", i, ev, ev.Prev, wt.typ, wt.value, first+int64(i))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("event %d did not come", i)
		}
	}
}

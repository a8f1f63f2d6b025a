package store_test

import (
	"context"
	"testing"

	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/storetest"
)

func TestGetStaleMany_ReturnsEachKeyInOrderAndNilForAbsentOnes(t *testing.T) {
	s, _ := storetest.Start(t)
	ctx := context.Background()
	revA, err := s.Txn(ctx, nil, store.Put("/m/a", []byte("A")))
	if err != nil {
		t.Fatal(err)
	}
	revC, err := s.Txn(ctx, nil, store.Put("/m/c", []byte("C")))
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := s.GetStaleMany(ctx, []string{"/m/c", "/m/b", "/m/a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(kvs) != 3 || kvs[1] != nil {
		t.Fatalf("got %+v, want c, nil, a", kvs)
	}
	if kvs[0] == nil || string(kvs[0].Value) != "C" || kvs[0].ModRevision != revC {
		t.Errorf("/m/c: %+v, want C at %d", kvs[0], revC)
	}
	if kvs[2] == nil || string(kvs[2].Value) != "A" || kvs[2].ModRevision != revA {
		t.Errorf("/m/a: %+v, want A at %d", kvs[2], revA)
	}
	if kvs, err := s.GetStaleMany(ctx, nil); err != nil || kvs != nil {
		t.Errorf("no keys: %v, %v", kvs, err)
	}
}

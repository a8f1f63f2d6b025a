package store_test

import (
	"context"
	"testing"

	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/storetest"
)

// TestListKeys_KeysAndRevisionsWithoutValues: ListKeys answers every key
// under the prefix, in key order, with its revisions and no value, and
// sees a write made just before it.
func TestListKeys_KeysAndRevisionsWithoutValues(t *testing.T) {
	s, _ := storetest.Start(t)
	ctx := context.Background()
	revs := map[string]int64{}
	for _, k := range []string{"/p/b", "/p/a", "/q/c"} {
		rev, err := s.Txn(ctx, nil, store.Put(k, []byte("value of "+k)))
		if err != nil {
			t.Fatal(err)
		}
		revs[k] = rev
	}
	rev, err := s.Txn(ctx, nil, store.Put("/p/b", []byte("changed")))
	if err != nil {
		t.Fatal(err)
	}
	kvs, err := s.ListKeys(ctx, "/p/")
	if err != nil {
		t.Fatal(err)
	}
	if len(kvs) != 2 || kvs[0].Key != "/p/a" || kvs[1].Key != "/p/b" {
		t.Fatalf("keys %+v, want /p/a and /p/b", kvs)
	}
	if kvs[0].ModRevision != revs["/p/a"] || kvs[1].ModRevision != rev || kvs[1].CreateRevision != revs["/p/b"] {
		t.Fatalf("revisions %+v, want /p/a at %d, /p/b created at %d and changed at %d", kvs, revs["/p/a"], revs["/p/b"], rev)
	}
	for _, kv := range kvs {
		if kv.Value != nil {
			t.Fatalf("%s came with its value %q", kv.Key, kv.Value)
		}
	}
}

// Package storetest starts a real embedded etcd for tests.
package storetest

import (
	"context"
	"testing"

	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/embedded"
)

// Start runs an embedded etcd under t.TempDir() and returns a store on it
// and its client endpoint ("unix://" and the path of its socket, for
// store.Dial or --etcd-endpoints of a process run by the same user). Both
// stop at test cleanup.
func Start(t testing.TB) (*store.Store, string) {
	t.Helper()
	return StartWith(t, embedded.Options{})
}

// StartWith is Start with opts for the embedded etcd (a small Quota, say).
func StartWith(t testing.TB, opts embedded.Options) (*store.Store, string) {
	t.Helper()
	e, err := embedded.Start(t.TempDir(), opts)
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	cli, err := store.Dial(context.Background(), []string{e.Endpoint})
	if err != nil {
		e.Close()
		t.Fatalf("dial etcd: %v", err)
	}
	t.Cleanup(func() {
		cli.Close()
		e.Close()
	})
	return store.New(cli), e.Endpoint
}

// Values reads every key under prefix from s, with its raw stored value
// (encrypted values stay encrypted), for tests that look at what the store
// holds. It fails t when the store does not answer.
func Values(t testing.TB, s *store.Store, prefix string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	from := ""
	for {
		page, err := s.List(context.Background(), prefix, store.ListOptions{From: from, Limit: 1000})
		if err != nil {
			t.Fatalf("storetest: list %s: %v", prefix, err)
		}
		for _, kv := range page.KVs {
			out[kv.Key] = kv.Value
		}
		if !page.More || len(page.KVs) == 0 {
			return out
		}
		from = page.KVs[len(page.KVs)-1].Key + "\x00"
	}
}

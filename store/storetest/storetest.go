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

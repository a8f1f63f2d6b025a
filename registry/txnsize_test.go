package registry_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/embedded"
)

// TestTxnSize_BeyondTheStoresLimitIs422AndNeverReachesTheStore runs an
// etcd that accepts the fewest conditions and writes per transaction a
// registry allows (registry.MinTxnOps) and a registry told the same: a
// Txn that needs more is refused with 422 naming its size and the limit,
// and the store does not move; a Txn at the limit commits, and so does one
// object with the most owner references the metadata limits allow.
func TestTxnSize_BeyondTheStoresLimitIs422AndNeverReachesTheStore(t *testing.T) {
	const limit = registry.MinTxnOps
	e, err := embedded.Start(t.TempDir(), embedded.Options{MaxTxnOps: limit})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := store.Dial(context.Background(), []string{e.Endpoint})
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close(); e.Close() })
	s := store.New(cli)
	enc, err := registry.LoadOrCreateKey(filepath.Join(t.TempDir(), "key"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := registry.New(s, registry.Options{Kinds: kinds.All(kinds.Deps{}), Encryption: enc, MaxTxnOps: limit - 1}); err == nil {
		t.Fatal("a registry accepted a MaxTxnOps below MinTxnOps")
	}
	r, err := registry.New(s, registry.Options{Kinds: kinds.All(kinds.Deps{}), Encryption: enc, MaxTxnOps: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	ctx := sysCtx()
	if err := r.Init(ctx); err != nil {
		t.Fatal(err)
	}

	// Creates in one namespace: one condition each, two for the namespace.
	creates := func(prefix string, n int) *registry.Txn {
		tx := r.Txn()
		for i := range n {
			tx.Create(testkit.Secret("default", fmt.Sprintf("%s%d", prefix, i), nil))
		}
		return tx
	}
	rev := revisionOf(t, s)
	_, err = creates("over", limit-1).Commit(ctx)
	wantTooLarge(t, err, "transaction.conditions", fmt.Sprintf("%d conditions and %d writes", limit+1, limit-1), limit)
	if got := revisionOf(t, s); got != rev {
		t.Fatalf("the refused transaction moved the store from %d to %d", rev, got)
	}
	if res, err := creates("fits", limit-2).Commit(ctx); err != nil || len(res) != limit-2 {
		t.Fatalf("a transaction at the limit: %d results, %v", len(res), err)
	}

	dep := testkit.Secret("default", "dependent", nil)
	for i := range api.MaxOwnerReferences {
		o, err := r.Create(ctx, testkit.Secret("default", fmt.Sprintf("owner%d", i), nil))
		if err != nil {
			t.Fatal(err)
		}
		dep.OwnerReferences = append(dep.OwnerReferences, api.OwnerRefTo(o, false))
	}
	if _, err := r.Create(ctx, dep); err != nil {
		t.Fatalf("a create with %d owners: %v", api.MaxOwnerReferences, err)
	}
}

// wantTooLarge fails the test unless err is a 422 Invalid with a TooMany
// cause on field, and a message holding size and limit.
func wantTooLarge(t *testing.T, err error, field, size string, limit int) {
	t.Helper()
	if !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("want Invalid, got %v", err)
	}
	st := statusOf(t, err)
	if st.Code != 422 || !strings.Contains(st.Message, size) || !strings.Contains(st.Message, fmt.Sprintf("at most %d", limit)) {
		t.Fatalf("message does not name the size and the limit: %d %s", st.Code, st.Message)
	}
	for _, c := range st.Details.Causes {
		if c.Field == field && c.Type == "FieldValueTooMany" {
			return
		}
	}
	t.Fatalf("no TooMany cause on %s: %+v", field, st.Details.Causes)
}

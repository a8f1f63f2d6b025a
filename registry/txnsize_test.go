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
// etcd that accepts at most 8 conditions and 8 writes per transaction and a
// registry told the same: writes that need more (a multi-object Txn, an
// object with many new owners) are refused with 422 naming the size and
// the limit, the store does not move, and writes at the limit commit.
func TestTxnSize_BeyondTheStoresLimitIs422AndNeverReachesTheStore(t *testing.T) {
	const limit = 8
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
	r, err := registry.New(s, registry.Options{Kinds: kinds.All(kinds.Deps{}), Encryption: enc, MaxTxnOps: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	ctx := sysCtx()
	if err := r.Init(ctx); err != nil {
		t.Fatal(err)
	}
	var owners []*api.Object
	for i := range 6 {
		o, err := r.Create(ctx, testkit.Secret("default", fmt.Sprintf("owner%d", i), nil))
		if err != nil {
			t.Fatal(err)
		}
		owners = append(owners, o)
	}

	// Eight creates in one namespace: 8 writes and 10 conditions (one per
	// object, two for the namespace).
	tx := r.Txn()
	for i := range limit {
		tx.Create(testkit.Secret("default", fmt.Sprintf("batch%d", i), nil))
	}
	rev := revisionOf(t, s)
	_, err = tx.Commit(ctx)
	wantTooLarge(t, err, "transaction.conditions", "10 conditions and 8 writes", "")
	if got := revisionOf(t, s); got != rev {
		t.Fatalf("the refused transaction moved the store from %d to %d", rev, got)
	}

	// One object with six new owners: its own key, two for the namespace
	// and six owners are 9 conditions.
	dep := testkit.Secret("default", "dependent", nil)
	for _, o := range owners {
		dep.OwnerReferences = append(dep.OwnerReferences, api.OwnerRefTo(o, false))
	}
	_, err = r.Create(ctx, dep)
	wantTooLarge(t, err, "transaction.conditions", "9 conditions and 1 writes", `Secret "dependent"`)

	// At the limit: five owners are 8 conditions.
	dep.OwnerReferences = dep.OwnerReferences[:5]
	if _, err := r.Create(ctx, dep); err != nil {
		t.Fatalf("a create at the limit: %v", err)
	}
	tx = r.Txn()
	for i := range 6 {
		tx.Create(testkit.Secret("default", fmt.Sprintf("fits%d", i), nil))
	}
	if res, err := tx.Commit(ctx); err != nil || len(res) != 6 {
		t.Fatalf("a transaction at the limit: %d results, %v", len(res), err)
	}
}

// wantTooLarge fails the test unless err is a 422 Invalid with a TooMany
// cause on field, and a message holding size and, when not "", object.
func wantTooLarge(t *testing.T, err error, field, size, object string) {
	t.Helper()
	if !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("want Invalid, got %v", err)
	}
	st := statusOf(t, err)
	if st.Code != 422 || !strings.Contains(st.Message, size) || !strings.Contains(st.Message, "at most 8") ||
		!strings.Contains(st.Message, object) {
		t.Fatalf("message does not name the object, its size and the limit: %d %s", st.Code, st.Message)
	}
	for _, c := range st.Details.Causes {
		if c.Field == field && c.Type == "FieldValueTooMany" {
			return
		}
	}
	t.Fatalf("no TooMany cause on %s: %+v", field, st.Details.Causes)
}

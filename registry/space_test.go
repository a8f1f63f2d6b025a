package registry_test

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/storetest"
)

// widgetRegistry is a registry serving Widgets, whose spec holds anything,
// with maxObject as its object size limit (the default when 0), over s,
// with the encryption key in keyFile (created if missing).
func widgetRegistry(t *testing.T, s *store.Store, keyFile string, maxObject int64) *registry.Registry {
	t.Helper()
	enc, err := registry.LoadOrCreateKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	r, err := registry.New(s, registry.Options{Kinds: append(kinds.All(kinds.Deps{}), testkit.WidgetKind()),
		Encryption: enc, MaxObjectBytes: maxObject})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Init(sysCtx()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// widgetOf is a Widget whose spec holds n bytes.
func widgetOf(name string, n int) *api.Object {
	return testkit.Widget("default", name, testkit.SpecOf(map[string]string{"blob": strings.Repeat("w", n)}))
}

// assertTooLarge checks that err is a 413 whose message names limit.
func assertTooLarge(t *testing.T, err error, limit string) {
	t.Helper()
	st := statusOf(t, err)
	if st.Code != http.StatusRequestEntityTooLarge || st.Reason != api.ReasonTooLarge {
		t.Fatalf("%v: code %d, reason %s; want 413 RequestEntityTooLarge", err, st.Code, st.Reason)
	}
	if !strings.Contains(st.Message, limit) {
		t.Fatalf("message %q does not name the limit %s", st.Message, limit)
	}
}

func TestCreate_ObjectOverMaxObjectBytesIs413NamingTheLimit(t *testing.T) {
	s, _ := storetest.Start(t)
	r := widgetRegistry(t, s, filepath.Join(t.TempDir(), "key"), 0)
	limit := fmt.Sprintf("%d bytes (1.5Mi)", registry.DefaultMaxObjectBytes)
	_, err := r.Create(sysCtx(), widgetOf("large", registry.DefaultMaxObjectBytes))
	assertTooLarge(t, err, limit)
	if _, err := r.Get(sysCtx(), testkit.KindWidget, "default", "large"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("a refused object was stored: %v", err)
	}
	if _, err := r.Create(sysCtx(), widgetOf("fits", registry.DefaultMaxObjectBytes-4096)); err != nil {
		t.Fatalf("create under the limit: %v", err)
	}
	tx := r.Txn()
	tx.Create(widgetOf("in-a-txn", registry.DefaultMaxObjectBytes))
	_, err = tx.Commit(sysCtx())
	assertTooLarge(t, err, limit)
}

func TestUpdate_ObjectOverALowerLimitMayShrinkButNotGrow(t *testing.T) {
	s, _ := storetest.Start(t)
	key := filepath.Join(t.TempDir(), "key")
	big, err := widgetRegistry(t, s, key, 0).Create(sysCtx(), widgetOf("w", 100<<10))
	if err != nil {
		t.Fatal(err)
	}
	r := widgetRegistry(t, s, key, 64<<10) // the limit is lowered
	grown := big.DeepCopy()
	grown.Labels = map[string]string{"more": strings.Repeat("x", 60)}
	_, err = r.Update(sysCtx(), grown)
	assertTooLarge(t, err, "65536 bytes (64Ki)")
	shrunk := big.DeepCopy()
	shrunk.SetField(api.FieldSpec, []byte(`{"blob":"small"}`))
	if _, err := r.Update(sysCtx(), shrunk); err != nil {
		t.Fatalf("an update that shrinks an object to under the limit: %v", err)
	}
}

func TestTxn_LargerThanOneEtcdRequestIs413NamingTheLimit(t *testing.T) {
	s, _ := storetest.Start(t)
	r := widgetRegistry(t, s, filepath.Join(t.TempDir(), "key"), 0)
	before := revisionOf(t, s)
	tx := r.Txn()
	for i := range 3 {
		tx.Create(widgetOf(fmt.Sprintf("w%d", i), registry.DefaultMaxObjectBytes-4096))
	}
	_, err := tx.Commit(sysCtx())
	assertTooLarge(t, err, fmt.Sprintf("at most %d (4Mi)", store.MaxTxnBytes))
	if after := revisionOf(t, s); after != before {
		t.Fatalf("a refused transaction wrote: revision %d → %d", before, after)
	}
}

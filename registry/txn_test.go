package registry_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
)

// revisionOf is the store's current revision.
func revisionOf(t *testing.T, s *store.Store) int64 {
	t.Helper()
	rev, err := s.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// statusOf returns err as an *api.Status, failing the test otherwise.
func statusOf(t *testing.T, err error) *api.Status {
	t.Helper()
	var st *api.Status
	if !errors.As(err, &st) {
		t.Fatalf("error %v (%T) is not an *api.Status", err, err)
	}
	return st
}

func TestTxn_OneInvalidItemWritesNothing(t *testing.T) {
	r, s := newRegistry(t)
	ctx := sysCtx()
	existing, err := r.Create(ctx, testkit.Secret("default", "existing", nil))
	if err != nil {
		t.Fatal(err)
	}
	before := revisionOf(t, s)
	bad := testkit.Secret("default", "Not_A_Name", nil)
	update := existing.DeepCopy()
	update.Labels = map[string]string{"touched": "yes"}

	tx := r.Txn()
	tx.Create(testkit.Secret("default", "a", nil))
	tx.Update(update)
	tx.Create(bad)
	tx.Also(nil, store.Put("/cairn/test/aux", []byte("x")))
	_, err = tx.Commit(ctx)
	if !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("commit: %v, want Invalid", err)
	}
	if msg := statusOf(t, err).Message; !strings.Contains(msg, `transaction item 2 (create Secret "default/Not_A_Name")`) {
		t.Errorf("the error does not name the failing item: %q", msg)
	}
	if after := revisionOf(t, s); after != before {
		t.Fatalf("the store moved from revision %d to %d: something was written", before, after)
	}
	if _, err := r.Get(ctx, "Secret", "default", "a"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("a: %v, want NotFound", err)
	}
	if got, _ := r.Get(ctx, "Secret", "default", "existing"); got.Labels["touched"] != "" {
		t.Error("the update was written")
	}
	if _, err := s.Get(context.Background(), "/cairn/test/aux"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("aux key: %v, want not found", err)
	}
}

func TestTxn_OwnerCreatedInTheSameTransactionWithAuxKey(t *testing.T) {
	r, s := newRegistry(t)
	ctx := sysCtx()
	token := "worker-token-for-e1"
	tx := r.Txn()
	pending := tx.Create(testkit.Secret("default", "", nil, testkit.GenerateName("event-")))
	if pending.UID == "" || !strings.HasPrefix(pending.Name, "event-") {
		t.Fatalf("pending object lacks uid or name: %+v", pending.ObjectMeta)
	}
	dep := testkit.Secret("default", pending.Name+"-secret", nil,
		testkit.StringData(map[string]string{"token": token}), testkit.ControlledBy(pending))
	tx.Create(dep)
	tx.Also(nil, auth.TokenOp(token, identity.User{Name: "event:default/" + pending.Name, Scope: "default/" + pending.Name}))
	res, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].Object.UID != pending.UID || res[1].Object.OwnerReferences[0].UID != pending.UID {
		t.Fatalf("results: %+v", res)
	}
	if res[0].Object.ResourceVersion != res[1].Object.ResourceVersion || res[0].Object.ResourceVersion == "" {
		t.Errorf("objects of one transaction at versions %s and %s", res[0].Object.ResourceVersion, res[1].Object.ResourceVersion)
	}
	got, err := r.Get(ctx, "Secret", "default", dep.Name)
	if err != nil || got.OwnerReferences[0].Name != pending.Name {
		t.Fatalf("dependent: %v %v", got, err)
	}
	u, err := auth.New(s).Authenticate(context.Background(), token)
	if err != nil || u.Scope != "default/"+pending.Name {
		t.Fatalf("the token written with the objects: %+v %v", u, err)
	}

	// An owner reference with another uid than the pending create's is
	// refused, naming the dependent.
	tx = r.Txn()
	other := tx.Create(testkit.Secret("default", "owner2", nil))
	wrong := testkit.Secret("default", "dep2", nil)
	wrong.OwnerReferences = []api.OwnerReference{{Kind: "Secret", Name: other.Name, UID: "not-" + other.UID}}
	tx.Create(wrong)
	if _, err := tx.Commit(ctx); !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), `item 1 (create Secret "default/dep2")`) {
		t.Fatalf("wrong uid of a pending owner: %v", err)
	}
}

func TestTxn_ConflictOnOneItemNamesIt(t *testing.T) {
	r, s := newRegistry(t)
	ctx := sysCtx()
	a, _ := r.Create(ctx, testkit.Secret("default", "a", nil))
	b, _ := r.Create(ctx, testkit.Secret("default", "b", nil))
	stale := b.DeepCopy()
	b.Labels = map[string]string{"v": "2"}
	if _, err := r.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	before := revisionOf(t, s)
	a.Labels = map[string]string{"v": "2"}
	stale.Labels = map[string]string{"v": "3"}
	tx := r.Txn()
	tx.Update(a)
	tx.Update(stale)
	_, err := tx.Commit(ctx)
	if !errors.Is(err, api.ErrConflict) {
		t.Fatalf("commit: %v, want Conflict", err)
	}
	st := statusOf(t, err)
	if !strings.Contains(st.Message, `transaction item 1 (update Secret "default/b")`) || st.Details == nil || st.Details.Name != "b" {
		t.Errorf("the conflict does not name b: %q %+v", st.Message, st.Details)
	}
	if after := revisionOf(t, s); after != before {
		t.Fatal("a was written although b conflicted")
	}

	// Without resourceVersions, a lost race is retried, as Update does.
	a, _ = r.Get(ctx, "Secret", "default", "a")
	a.ResourceVersion, a.Labels = "", map[string]string{"v": "latest"}
	tx = r.Txn()
	tx.Update(a)
	tx.Delete("Secret", "default", "b", api.DeleteOptions{})
	res, err := tx.Commit(ctx)
	if err != nil || res[0].Object.Labels["v"] != "latest" || !res[1].Object.Deleting() || res[1].Gone {
		t.Fatalf("unconditional update and delete: %+v %v", res, err)
	}
}

func TestTxn_NamespaceTerminatingRefusesCreates(t *testing.T) {
	r, s := newRegistry(t)
	ctx := sysCtx()
	if err := r.EnsureNamespace(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Delete(ctx, "Namespace", "", "team", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	before := revisionOf(t, s)
	tx := r.Txn()
	tx.Create(testkit.Secret("default", "ok", nil))
	tx.Create(testkit.Secret("team", "late", nil))
	_, err := tx.Commit(ctx)
	if !errors.Is(err, api.ErrForbidden) || !strings.Contains(err.Error(), `item 1 (create Secret "team/late")`) ||
		!strings.Contains(err.Error(), `namespace "team" is being deleted`) {
		t.Fatalf("create in a terminating namespace: %v", err)
	}
	if after := revisionOf(t, s); after != before {
		t.Fatal("something was written")
	}
	tx = r.Txn()
	tx.Create(testkit.Secret("nowhere", "x", nil))
	if _, err := tx.Commit(ctx); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("create in a missing namespace: %v", err)
	}
	// A namespace created in the same transaction holds its creates.
	tx = r.Txn()
	tx.Create(testkit.Object(api.KindNamespace, "", "fresh"))
	tx.Create(testkit.Secret("fresh", "first", nil))
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("namespace and its first object together: %v", err)
	}
}

func TestTxn_WatchersSeeEveryObjectsEvent(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	del, _ := r.Create(ctx, testkit.Secret("default", "gone", nil))
	w, err := r.Watch(ctx, "Secret", "default", api.ListOptions{ResourceVersion: del.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	tx := r.Txn()
	for i := range 3 {
		tx.Create(testkit.Secret("default", fmt.Sprintf("w%d", i), nil))
	}
	tx.Delete("Secret", "default", "gone", api.DeleteOptions{Force: true})
	res, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !res[3].Gone {
		t.Errorf("forced delete in a transaction: %+v", res[3])
	}
	want := map[string]bool{"ADDED w0": true, "ADDED w1": true, "ADDED w2": true, "DELETED gone": true}
	timeout := time.After(20 * time.Second)
	for len(want) > 0 {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("watch ended: %v", w.Err())
			}
			if ev.Type == api.Bookmark {
				continue
			}
			got := string(ev.Type) + " " + ev.Object.Name
			if !want[got] || ev.Object.ResourceVersion != res[0].Object.ResourceVersion {
				t.Fatalf("unexpected event %s at %s", got, ev.Object.ResourceVersion)
			}
			delete(want, got)
		case <-timeout:
			t.Fatalf("events never seen: %v", want)
		}
	}
}

func TestTxn_BoundsAndDuplicates(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	tx := r.Txn()
	for i := range registry.MaxTxnItems + 1 {
		tx.Create(testkit.Secret("default", fmt.Sprintf("s%d", i), nil))
	}
	if _, err := tx.Commit(ctx); !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("too many items: %v", err)
	}
	// Within the item bound, but beyond etcd's limit on conditions: each
	// create in its own namespace needs three.
	tx = r.Txn()
	for i := range 50 {
		ns := fmt.Sprintf("ns%d", i)
		tx.Create(testkit.Secret(ns, "s", nil))
	}
	if _, err := tx.Commit(ctx); !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), "150 conditions") ||
		!strings.Contains(err.Error(), "at most 128") {
		t.Fatalf("too many conditions: %v", err)
	}
	tx = r.Txn()
	tx.Create(testkit.Secret("default", "twice", nil))
	tx.Delete("Secret", "default", "twice", api.DeleteOptions{})
	if _, err := tx.Commit(ctx); !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), "item 1") {
		t.Fatalf("one object written twice: %v", err)
	}
	if _, err := tx.Commit(ctx); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("second commit: %v", err)
	}
	tx = r.Txn()
	tx.Also([]store.Cond{store.Present("/cairn/test/missing")}, store.Put("/cairn/test/x", nil))
	tx.Create(testkit.Secret("default", "cond", nil))
	if _, err := tx.Commit(ctx); !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "item 0 (extra writes)") {
		t.Fatalf("failed extra condition: %v", err)
	}
	// Sixty creates in one namespace share its guards: within the bounds.
	tx = r.Txn()
	for i := range 60 {
		tx.Create(testkit.Secret("default", fmt.Sprintf("many%d", i), nil))
	}
	if res, err := tx.Commit(ctx); err != nil || len(res) != 60 {
		t.Fatalf("sixty creates: %d results, %v", len(res), err)
	}
}

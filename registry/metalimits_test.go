package registry_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
)

// TestLimits_StoredObjectOverALimitMayShrinkButNotGrow writes, behind the
// registry's back, a Namespace as an older server could have stored it:
// more finalizers than api.MaxFinalizers and two owner references with one
// uid. Updates that keep or shrink those lists are accepted (so that its
// finalizers can still be removed one by one); one that grows a list or
// adds a new duplicate is refused with 422.
func TestLimits_StoredObjectOverALimitMayShrinkButNotGrow(t *testing.T) {
	r, s := newRegistry(t)
	ctx := sysCtx()
	legacy := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindNamespace}}
	legacy.Name, legacy.UID, legacy.Generation = "legacy", "legacy-uid", 1
	for i := range api.MaxFinalizers + 8 {
		legacy.Finalizers = append(legacy.Finalizers, fmt.Sprintf("cairn.dev/f%d", i))
	}
	legacy.OwnerReferences = []api.OwnerReference{
		{Kind: api.KindNamespace, Name: "default", UID: "gone"},
		{Kind: api.KindNamespace, Name: "default", UID: "gone"},
	}
	raw, err := json.Marshal(legacy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn(ctx, nil, store.Put(registry.KeyPrefix+"namespaces/legacy", raw)); err != nil {
		t.Fatal(err)
	}

	cur, err := r.Get(ctx, api.KindNamespace, "", "legacy")
	if err != nil {
		t.Fatal(err)
	}
	cur.Finalizers = cur.Finalizers[1:]
	if cur, err = r.Update(ctx, cur); err != nil {
		t.Fatalf("removing a finalizer from a list over the limit: %v", err)
	}
	cur.Labels = map[string]string{"touched": "yes"}
	if cur, err = r.Update(ctx, cur); err != nil {
		t.Fatalf("an update that keeps the lists as they are: %v", err)
	}

	grow := cur.DeepCopy()
	grow.Finalizers = append(grow.Finalizers, "cairn.dev/more")
	if _, err := r.Update(ctx, grow); !errors.Is(err, api.ErrInvalid) || statusOf(t, err).Details.Causes[0].Field != "metadata.finalizers" {
		t.Fatalf("growing a list over the limit: %v", err)
	}
	dup := cur.DeepCopy()
	dup.Finalizers = dup.Finalizers[:2]
	kube := api.OwnerReference{Kind: api.KindNamespace, Name: "kube", UID: "kube-uid"}
	dup.OwnerReferences = append(dup.OwnerReferences, kube, kube)
	_, err = r.Update(ctx, dup)
	if !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("a new duplicate: %v", err)
	}
	if c := statusOf(t, err).Details.Causes; len(c) != 1 || c[0].Field != "metadata.ownerReferences[3].uid" {
		t.Fatalf("a new duplicate: causes %+v", c)
	}
}

// TestLimits_DeletingAnObjectAtTheFinalizerLimitStillCompletes creates an
// object with api.MaxFinalizers finalizers and deletes it: the deletion
// mark adds cascade-deletion beyond the limit, and the updates that remove
// the finalizers one by one are still accepted until the object is gone.
func TestLimits_DeletingAnObjectAtTheFinalizerLimitStillCompletes(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	obj := testkit.Secret("default", "full", nil)
	for i := range api.MaxFinalizers {
		obj.Finalizers = append(obj.Finalizers, fmt.Sprintf("cairn.dev/f%d", i))
	}
	if _, err := r.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	cur, _, err := r.Delete(ctx, "Secret", "default", "full", api.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cur.Finalizers) != api.MaxFinalizers+1 {
		t.Fatalf("marked with %d finalizers", len(cur.Finalizers))
	}
	for len(cur.Finalizers) > 0 {
		cur.Finalizers = cur.Finalizers[1:]
		out, err := r.Update(ctx, cur)
		if err != nil {
			t.Fatalf("removing a finalizer, %d left: %v", len(cur.Finalizers), err)
		}
		cur = out
	}
	if _, err := r.Get(ctx, "Secret", "default", "full"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("after its last finalizer: %v", err)
	}
}

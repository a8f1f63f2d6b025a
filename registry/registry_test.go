package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
)

// sysCtx is a context carrying the system identity (an admin): the
// registry refuses a context without a caller.
func sysCtx() context.Context { return identity.With(context.Background(), identity.System()) }

// startOn builds a registry over s with opts (the real kinds when opts
// names none, and a fresh encryption key when it has none), initializes it
// and closes it when the test ends.
func startOn(t *testing.T, s *store.Store, opts registry.Options) *registry.Registry {
	t.Helper()
	if opts.Kinds == nil {
		opts.Kinds = kinds.All(kinds.Deps{})
	}
	if opts.Encryption == nil {
		enc, err := registry.LoadOrCreateKey(filepath.Join(t.TempDir(), "key"))
		if err != nil {
			t.Fatal(err)
		}
		opts.Encryption = enc
	}
	r, err := registry.New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	if err := r.Init(sysCtx()); err != nil {
		t.Fatal(err)
	}
	return r
}

func newRegistry(t *testing.T) (*registry.Registry, *store.Store) {
	t.Helper()
	return newCachedRegistry(t, 0, 200*time.Millisecond)
}

func TestCreate_SetsServerFieldsAndRejectsDuplicates(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	in := testkit.Secret("default", "s1", nil, testkit.StringData(map[string]string{"k": "v"}))
	in.UID = "caller-chosen"
	in.Generation = 7
	in.SetField("status", json.RawMessage(`{"x":1}`))
	out, err := r.Create(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if out.UID == "" || out.UID == "caller-chosen" || out.Generation != 1 || out.ResourceVersion == "" || out.CreationTimestamp.IsZero() {
		t.Fatalf("server fields not set: %+v", out.ObjectMeta)
	}
	if out.Field("status") != nil || out.Field("stringData") != nil {
		t.Fatalf("status or stringData kept: %s %s", out.Field("status"), out.Field("stringData"))
	}
	if _, err := r.Create(ctx, testkit.Secret("default", "s1", nil)); !errors.Is(err, api.ErrAlreadyExists) {
		t.Fatalf("duplicate create: %v", err)
	}
}

func TestCreate_GenerateName(t *testing.T) {
	r, _ := newRegistry(t)
	in := testkit.Secret("default", "", nil, testkit.GenerateName("ev-"))
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		out, err := r.Create(sysCtx(), in)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.Name, "ev-") || len(out.Name) != 8 || seen[out.Name] {
			t.Fatalf("bad generated name %q", out.Name)
		}
		seen[out.Name] = true
	}
}

func TestUpdate_GenerationGrowsOnlyOnDesiredStateChange(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	out, err := r.Create(ctx, testkit.Secret("default", "g", nil, testkit.StringData(map[string]string{"a": "1"})))
	if err != nil {
		t.Fatal(err)
	}
	out.Labels = map[string]string{"x": "y"}
	out, err = r.Update(ctx, out)
	if err != nil || out.Generation != 1 {
		t.Fatalf("label change: gen %d err %v", out.Generation, err)
	}
	out.SetField("stringData", json.RawMessage(`{"a":"2"}`))
	out, err = r.Update(ctx, out)
	if err != nil || out.Generation != 2 {
		t.Fatalf("data change: gen %d err %v", out.Generation, err)
	}
	rv := out.ResourceVersion
	out, err = r.Update(ctx, out)
	if err != nil || out.Generation != 2 || out.ResourceVersion != rv {
		t.Fatalf("no-op update: gen %d rv %s (was %s) err %v", out.Generation, out.ResourceVersion, rv, err)
	}
}

func TestUpdate_StaleResourceVersionConflicts(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	v1, _ := r.Create(ctx, testkit.Secret("default", "c", nil))
	v2 := v1.DeepCopy()
	v2.Labels = map[string]string{"w": "1"}
	if _, err := r.Update(ctx, v2); err != nil {
		t.Fatal(err)
	}
	v1.Labels = map[string]string{"w": "2"}
	if _, err := r.Update(ctx, v1); !errors.Is(err, api.ErrConflict) {
		t.Fatalf("stale update: %v", err)
	}
}

func TestUpdate_ConcurrentWritersExactlyOneWinsEachRound(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	obj, _ := r.Create(ctx, testkit.Secret("default", "race", nil))
	for round := 0; round < 10; round++ {
		cur, err := r.Get(ctx, "Secret", "default", "race")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				c := cur.DeepCopy()
				c.Labels = map[string]string{"writer": fmt.Sprintf("r%d-w%d", round, w)}
				if _, err := r.Update(ctx, c); err == nil {
					mu.Lock()
					wins++
					mu.Unlock()
				} else if !errors.Is(err, api.ErrConflict) {
					t.Errorf("writer %d: %v", w, err)
				}
			}(w)
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("round %d: %d writers won, want 1", round, wins)
		}
	}
	_ = obj
}

func TestStatus_SubresourceIsolation(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	out, err := r.Create(ctx, testkit.Object(api.KindNamespace, "", "iso"))
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Field("status")) != `{"phase":"Active"}` {
		t.Fatalf("initial status %s", out.Field("status"))
	}
	// A main-resource write cannot change status.
	out.SetField("status", json.RawMessage(`{"phase":"Terminating"}`))
	out.Labels = map[string]string{"a": "b"}
	out, err = r.Update(ctx, out)
	if err != nil || string(out.Field("status")) != `{"phase":"Active"}` || out.Labels["a"] != "b" {
		t.Fatalf("main write changed status or lost labels: %s %v %v", out.Field("status"), out.Labels, err)
	}
	// A status write cannot change metadata.
	out.SetField("status", json.RawMessage(`{"phase":"Terminating"}`))
	out.Labels = map[string]string{"a": "changed"}
	out, err = r.UpdateStatus(ctx, out)
	if err != nil || string(out.Field("status")) != `{"phase":"Terminating"}` || out.Labels["a"] != "b" {
		t.Fatalf("status write: %s %v %v", out.Field("status"), out.Labels, err)
	}
}

func TestDelete_MarksThenUpdateWithoutFinalizersRemoves(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	in := testkit.Secret("default", "d", nil)
	in.Finalizers = []string{"example.com/hold"}
	if _, err := r.Create(ctx, in); err != nil {
		t.Fatal(err)
	}
	out, gone, err := r.Delete(ctx, "Secret", "default", "d", api.DeleteOptions{})
	if err != nil || gone || !out.Deleting() || !out.HasFinalizer(api.FinalizerCascadeDeletion) {
		t.Fatalf("delete: %+v gone=%v err=%v", out.ObjectMeta, gone, err)
	}
	out.Finalizers = append(out.Finalizers, "example.com/late")
	if _, err := r.Update(ctx, out); !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("adding a finalizer to a deleting object: %v", err)
	}
	out.Finalizers = nil
	if _, err := r.Update(ctx, out); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx, "Secret", "default", "d"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("object should be gone: %v", err)
	}
}

func TestDelete_ForceRemovesAtOnceAndPreconditionsHold(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	obj, _ := r.Create(ctx, testkit.Secret("default", "f", nil))
	if _, _, err := r.Delete(ctx, "Secret", "default", "f", api.DeleteOptions{Preconditions: api.Preconditions{UID: "other"}}); !errors.Is(err, api.ErrConflict) {
		t.Fatalf("uid precondition: %v", err)
	}
	_, gone, err := r.Delete(ctx, "Secret", "default", "f", api.DeleteOptions{Force: true, Preconditions: api.Preconditions{UID: obj.UID}})
	if err != nil || !gone {
		t.Fatalf("force: gone=%v err=%v", gone, err)
	}
	if _, _, err := r.Delete(ctx, "Namespace", "", "default", api.DeleteOptions{}); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("deleting default namespace: %v", err)
	}
}

func TestCreate_OwnerChecks(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	owner, _ := r.Create(ctx, testkit.Secret("default", "owner", nil))
	dep := testkit.Secret("default", "dep", nil)
	dep.OwnerReferences = []api.OwnerReference{{Kind: "Secret", Name: "owner", UID: "wrong"}}
	if _, err := r.Create(ctx, dep); !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("wrong uid: %v", err)
	}
	dep.OwnerReferences[0].UID = owner.UID
	if _, err := r.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Delete(ctx, "Secret", "default", "owner", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	late := testkit.Secret("default", "late", nil)
	late.OwnerReferences = []api.OwnerReference{{Kind: "Secret", Name: "owner", UID: owner.UID}}
	if _, err := r.Create(ctx, late); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("dependent of a deleting owner: %v", err)
	}
}

func TestSecret_EncryptedAtRest(t *testing.T) {
	r, s := newRegistry(t)
	ctx := sysCtx()
	if _, err := r.Create(ctx, testkit.Secret("default", "enc", nil, testkit.StringData(map[string]string{"password": "hunter2-plain"}))); err != nil {
		t.Fatal(err)
	}
	kv, err := s.Get(ctx, registry.KeyPrefix+"secrets/default/enc")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(kv.Value), "hunter2") || strings.Contains(string(kv.Value), "aHVudGVy") || strings.Contains(string(kv.Value), "password") {
		t.Fatalf("secret stored in the clear: %q", kv.Value)
	}
	got, err := r.Get(ctx, "Secret", "default", "enc")
	if err != nil {
		t.Fatal(err)
	}
	var sec api.Secret
	if err := got.Into(&sec); err != nil || string(sec.Data["password"]) != "hunter2-plain" {
		t.Fatalf("round trip: %v %v", sec.Data, err)
	}
	// A ciphertext moved to another Secret's key does not decrypt there.
	if _, err := r.Create(ctx, testkit.Secret("default", "other", nil, testkit.StringData(map[string]string{"x": "y"}))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Txn(ctx, nil, store.Put(registry.KeyPrefix+"secrets/default/other", kv.Value)); err != nil {
		t.Fatal(err)
	}
	moved, err := r.Get(ctx, "Secret", "default", "other")
	if !errors.Is(err, api.ErrInternal) || moved != nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("moved ciphertext: got %v, %v; want an internal error without the value", moved, err)
	}
}

func TestList_LimitContinueAndSelector(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	for i := 0; i < 7; i++ {
		o := testkit.Secret("default", "s"+string(rune('a'+i)), nil)
		if i%2 == 0 {
			testkit.Labels("even", "true")(o)
		}
		if _, err := r.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	opts := api.ListOptions{Limit: 3}
	for {
		l, err := r.List(ctx, "secrets", "default", opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range l.Items {
			names = append(names, it.Name)
		}
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
	}
	if strings.Join(names, ",") != "sa,sb,sc,sd,se,sf,sg" {
		t.Fatalf("paged names %v", names)
	}
	l, err := r.List(ctx, "Secret", "", api.ListOptions{LabelSelector: "even=true", Limit: 2})
	if err != nil || len(l.Items) != 2 || l.Continue == "" {
		t.Fatalf("selected page: %v %v", l, err)
	}
	l2, err := r.List(ctx, "Secret", "", api.ListOptions{LabelSelector: "even=true", Limit: 2, Continue: l.Continue})
	if err != nil || len(l2.Items) != 2 || l2.Continue != "" || l2.Items[1].Name != "sg" {
		t.Fatalf("second selected page: %+v %v", l2, err)
	}
}

func TestWatch_ReplaysFromResourceVersionAndGoneAfterCompaction(t *testing.T) {
	r, s := newRegistry(t)
	ctx := sysCtx()
	a, _ := r.Create(ctx, testkit.Secret("default", "wa", nil))
	b, _ := r.Create(ctx, testkit.Secret("default", "wb", nil))
	w, err := r.Watch(ctx, "Secret", "default", api.ListOptions{ResourceVersion: a.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.Events()
	if ev.Type != api.Added || ev.Object.Name != "wb" || ev.Object.ResourceVersion != b.ResourceVersion {
		t.Fatalf("replayed %s %s", ev.Type, ev.Object.Name)
	}
	if _, _, err := r.Delete(ctx, "Secret", "default", "wa", api.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if ev = <-w.Events(); ev.Type != api.Deleted || ev.Object.Name != "wa" {
		t.Fatalf("delete event %s %s", ev.Type, ev.Object.Name)
	}
	for ev = range w.Events() {
		if ev.Type == api.Bookmark {
			break
		}
	}
	if ev.Type != api.Bookmark || ev.Object.ResourceVersion == "" {
		t.Fatalf("no bookmark: %+v", ev)
	}
	w.Stop()
	if w.Err() != nil {
		t.Fatalf("stopped watch error: %v", w.Err())
	}
	rev, _ := s.Revision(ctx)
	if err := s.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Watch(ctx, "Secret", "default", api.ListOptions{ResourceVersion: a.ResourceVersion}); !errors.Is(err, api.ErrExpired) {
		t.Fatalf("watch from compacted version: %v", err)
	}
}

func TestCreate_NamespaceMustExistAndNotBeTerminatingAndMayBeRecreated(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	if _, err := r.Create(ctx, testkit.Secret("nowhere", "a", nil)); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("create in a missing namespace: %v", err)
	}
	for _, force := range []bool{false, true} {
		if err := r.EnsureNamespace(ctx, "team"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Create(ctx, testkit.Secret("team", "before", nil)); err != nil {
			t.Fatal(err)
		}
		ns, _, err := r.Delete(ctx, "Namespace", "", "team", api.DeleteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Create(ctx, testkit.Secret("team", "during", nil)); !errors.Is(err, api.ErrForbidden) {
			t.Fatalf("create in a terminating namespace: %v", err)
		}
		// The namespace goes (as the collector would do it, or forced), and
		// a namespace of the same name takes new objects again.
		if _, _, err := r.Delete(ctx, "Secret", "team", "before", api.DeleteOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		if force {
			if _, _, err := r.Delete(ctx, "Namespace", "", "team", api.DeleteOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
		} else {
			ns.Finalizers = nil
			if _, err := r.Update(ctx, ns); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.Get(ctx, "Namespace", "", "team"); !errors.Is(err, api.ErrNotFound) {
			t.Fatalf("namespace still there (force=%v): %v", force, err)
		}
		if err := r.EnsureNamespace(ctx, "team"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Create(ctx, testkit.Secret("team", "after", nil)); err != nil {
			t.Fatalf("create in the recreated namespace (force=%v): %v", force, err)
		}
		if _, _, err := r.Delete(ctx, "Secret", "team", "after", api.DeleteOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.Delete(ctx, "Namespace", "", "team", api.DeleteOptions{Force: true}); err != nil {
			t.Fatal(err)
		}
	}
}

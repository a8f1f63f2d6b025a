package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store/storetest"
)

// TestUnconditional_TxnsAndPatchesOnSharedObjectsAllApplyWithoutDeadlock
// runs, at once, transactions that update the same two Secrets without a
// resourceVersion (half naming them in one order, half in the other) and
// patches of each: every write commits, each at a revision of its own (no
// write is lost or merged into another), none waits forever, and no lock
// is left behind.
func TestUnconditional_TxnsAndPatchesOnSharedObjectsAllApplyWithoutDeadlock(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	for _, n := range []string{"a", "b"} {
		if _, err := r.Create(ctx, testkit.Secret("default", n, nil)); err != nil {
			t.Fatal(err)
		}
	}
	const writers = 32
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var mu sync.Mutex
	revs := map[string]map[string]bool{"a": {}, "b": {}} // name → revisions written
	committed := func(objs ...*api.Object) {
		mu.Lock()
		defer mu.Unlock()
		for _, o := range objs {
			revs[o.Name][o.ResourceVersion] = true
		}
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			tx := r.Txn()
			names := []string{"a", "b"}
			if w%2 == 1 {
				names = []string{"b", "a"}
			}
			for _, n := range names {
				tx.Update(testkit.Secret("default", n, nil, testkit.Labels("txn", fmt.Sprint(w))))
			}
			res, err := tx.Commit(ctx)
			if err != nil {
				t.Errorf("txn %d: %v", w, err)
				return
			}
			committed(res[0].Object, res[1].Object)
		}()
		go func() {
			defer wg.Done()
			name := []string{"a", "b"}[w%2]
			patch := fmt.Sprintf(`{"metadata":{"labels":{"patch":"%d"}}}`, w)
			out, err := r.Patch(ctx, "Secret", "default", name, []byte(patch), false)
			if err != nil {
				t.Errorf("patch %d: %v", w, err)
				return
			}
			committed(out)
		}()
	}
	wg.Wait()
	for name, rs := range revs {
		if want := writers + writers/2; len(rs) != want {
			t.Errorf("%s: %d writes committed at distinct revisions, want %d", name, len(rs), want)
		}
	}
	if n := registry.LocksInUse(r); n != 0 {
		t.Fatalf("%d locks left behind", n)
	}
}

// TestUnconditional_WaitEndsWithTheCallersContext holds the lock an
// unconditional write to a Secret takes: such a write waits and, when its
// context ends, answers Timeout having written nothing; a conditional
// write does not wait; once the lock is released the unconditional write
// goes through.
func TestUnconditional_WaitEndsWithTheCallersContext(t *testing.T) {
	r, _ := newRegistry(t)
	ctx := sysCtx()
	cur, err := r.Create(ctx, testkit.Secret("default", "busy", nil))
	if err != nil {
		t.Fatal(err)
	}
	release, err := registry.LockObject(ctx, r, "Secret", "default", "busy")
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = r.Patch(short, "Secret", "default", "busy", []byte(`{"metadata":{"labels":{"waited":"yes"}}}`), false)
	if st := statusOf(t, err); st.Reason != api.ReasonTimeout {
		t.Fatalf("an unconditional patch whose context ended while waiting: %v", err)
	}
	cond := cur.DeepCopy()
	cond.Labels = map[string]string{"conditional": "yes"}
	if cur, err = r.Update(ctx, cond); err != nil {
		t.Fatalf("a conditional update while the lock is held: %v", err)
	}
	if cur.Labels["waited"] != "" {
		t.Fatalf("the timed-out patch was written: %v", cur.Labels)
	}
	release()
	if _, err := r.Patch(ctx, "Secret", "default", "busy", []byte(`{"metadata":{"labels":{"after":"yes"}}}`), false); err != nil {
		t.Fatal(err)
	}
	if n := registry.LocksInUse(r); n != 0 {
		t.Fatalf("%d locks left behind", n)
	}
	if _, err := r.Update(ctx, cond); !errors.Is(err, api.ErrConflict) {
		t.Fatalf("a stale conditional update: %v", err)
	}
}

// meddler is a kind whose update hook, while armed, patches the object
// being updated through the registry (which real hooks must not do): the
// write nested in the planning of another must not wait for the lock that
// other write holds.
type meddler struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata"`
	Spec           json.RawMessage `json:"spec,omitempty"`
}

// TestUnconditional_WriteNestedInAnotherDoesNotWaitForIt updates a Meddler
// without a resourceVersion while its hook patches the same object with
// the context it was given: both writes apply and nothing deadlocks.
func TestUnconditional_WriteNestedInAnotherDoesNotWaitForIt(t *testing.T) {
	var reg atomic.Pointer[registry.Registry]
	var armed atomic.Bool
	kind := registry.Define(registry.Spec[*meddler]{Kind: "Meddler", Namespaced: true,
		PrepareForUpdate: func(ctx context.Context, _ *registry.Admission, m, _ *meddler) error {
			if !armed.CompareAndSwap(true, false) {
				return nil
			}
			_, err := reg.Load().Patch(ctx, "Meddler", m.Namespace, m.Name, []byte(`{"metadata":{"annotations":{"nested":"yes"}}}`), false)
			return err
		}})
	s, _ := storetest.Start(t)
	enc, err := registry.LoadOrCreateKey(filepath.Join(t.TempDir(), "key"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := registry.New(s, registry.Options{Kinds: append(kinds.All(kinds.Deps{}), kind), Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	reg.Store(r)
	ctx, cancel := context.WithTimeout(sysCtx(), 30*time.Second)
	defer cancel()
	if err := r.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(ctx, testkit.Object("Meddler", "default", "m")); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	out, err := r.Update(ctx, testkit.Object("Meddler", "default", "m", testkit.Labels("outer", "yes")))
	if err != nil {
		t.Fatalf("the outer update: %v", err)
	}
	if out.Labels["outer"] != "yes" {
		t.Fatalf("the outer update was not applied: %+v", out.ObjectMeta)
	}
	if armed.Load() {
		t.Fatal("the hook never ran")
	}
	if n := registry.LocksInUse(r); n != 0 {
		t.Fatalf("%d locks left behind", n)
	}
}

package registry_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/registry"
)

// putLease creates or updates the Lease "controllers" held by holder after
// transitions changes of holder, and returns it.
func putLease(t *testing.T, r *registry.Registry, holder string, transitions int) *api.Object {
	t.Helper()
	ctx := sysCtx()
	spec := api.LeaseSpec{HolderIdentity: holder, LeaseDurationSeconds: 5, LeaseTransitions: transitions}
	l, err := api.FromResource(&api.Lease{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindLease},
		ObjectMeta: api.ObjectMeta{Name: "controllers"}, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	cur, err := r.Get(ctx, api.KindLease, "", "controllers")
	switch {
	case errors.Is(err, api.ErrNotFound):
		out, err := r.Create(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		return out
	case err != nil:
		t.Fatal(err)
	}
	l.ResourceVersion = cur.ResourceVersion
	out, err := r.Update(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFence_WritesCommitOnlyInTheFencesTerm(t *testing.T) {
	r, _ := newRegistry(t)
	l := putLease(t, r, "http://a", 3)
	fence := api.Fence{Lease: "controllers", UID: l.UID, Holder: "http://a", Term: 3}
	fenced := api.WithFence(sysCtx(), fence)

	// In the term: writes commit, also after a renewal (a new resourceVersion).
	if _, err := r.Create(fenced, testkit.Secret("default", "one", nil)); err != nil {
		t.Fatalf("create in the term: %v", err)
	}
	putLease(t, r, "http://a", 3) // a renewal
	s, err := r.Get(sysCtx(), api.KindSecret, "default", "one")
	if err != nil {
		t.Fatal(err)
	}
	s.Labels = map[string]string{"renewed": "yes"}
	if _, err := r.Update(fenced, s); err != nil {
		t.Fatalf("update after a renewal: %v", err)
	}
	// A stale resourceVersion is still the write's own Conflict.
	if _, err := r.Update(fenced, s); !errors.Is(err, api.ErrConflict) || api.IsNotLeader(err) {
		t.Fatalf("update at a stale resourceVersion: %v, want an ordinary Conflict", err)
	}

	// Another takes over: every fenced write is refused, naming the holder;
	// unfenced writes go on.
	putLease(t, r, "http://b", 4)
	for name, write := range map[string]func() error{
		"create": func() error { _, err := r.Create(fenced, testkit.Secret("default", "two", nil)); return err },
		"delete": func() error {
			_, _, err := r.Delete(fenced, api.KindSecret, "default", "one", api.DeleteOptions{})
			return err
		},
		"txn": func() error {
			tx := r.Txn()
			tx.Create(testkit.Secret("default", "three", nil))
			_, err := tx.Commit(fenced)
			return err
		},
	} {
		err := write()
		if !api.IsNotLeader(err) || !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "held by http://b") {
			t.Errorf("%s after a takeover: %v, want a NotLeader Conflict naming http://b", name, err)
		}
	}
	if _, err := r.Get(sysCtx(), api.KindSecret, "default", "two"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("a refused create was written: %v", err)
	}
	if _, err := r.Create(sysCtx(), testkit.Secret("default", "unfenced", nil)); err != nil {
		t.Fatalf("unfenced create: %v", err)
	}

	// A deleted Lease, even re-created by the same holder, is another term.
	if _, _, err := r.Delete(sysCtx(), api.KindLease, "", "controllers", api.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(fenced, testkit.Secret("default", "four", nil)); !api.IsNotLeader(err) || !strings.Contains(err.Error(), "released") {
		t.Fatalf("create with the Lease deleted: %v, want NotLeader (released)", err)
	}
	putLease(t, r, "http://a", 3)
	if _, err := r.Create(fenced, testkit.Secret("default", "five", nil)); !api.IsNotLeader(err) {
		t.Fatalf("create with the Lease re-created: %v, want NotLeader", err)
	}
}

func TestFence_ParseRoundTripsAndRejectsMalformedHeaders(t *testing.T) {
	f := api.Fence{Lease: "controllers", UID: "u-1", Holder: "https://a:7070/x?y=1&z", Term: 12}
	got, err := api.ParseFence(f.Header())
	if err != nil || got != f {
		t.Fatalf("ParseFence(Header()) = %+v, %v; want %+v", got, err, f)
	}
	for _, bad := range []string{"", "lease=controllers", "lease=c&uid=u&holder=h&term=x", "lease=c&uid=u&holder=h&term=-1", "%zz"} {
		if _, err := api.ParseFence(bad); !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("ParseFence(%q) = %v, want BadRequest", bad, err)
		}
	}
	if _, ok := api.FenceFrom(context.Background()); ok {
		t.Error("a bare context carries a fence")
	}
}

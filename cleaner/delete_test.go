package cleaner

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

func TestDeleteAll_NeverDeletesARecreatedObjectAndTakesAGoneOneAsDone(t *testing.T) {
	ts := servertest.Start(t)
	c := local.New(ts.Registry, identity.System())
	ctx := testkit.Context(t)
	create := func(o *api.Object) *api.Object {
		out, err := c.Create(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	evaluated := create(testkit.Secret("default", "s", nil))
	if _, _, err := c.Delete(ctx, api.KindSecret, "default", "s", api.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	recreated := create(testkit.Secret("default", "s", nil))
	deleted := create(testkit.Secret("default", "d", nil))
	cl, err := client.For[*api.Cleaner](c).Create(ctx, &api.Cleaner{ObjectMeta: api.ObjectMeta{Name: "c", Namespace: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	res := Resolution{Found: []Found{
		{Target: "s", Kind: api.KindSecret, Name: "s", UID: evaluated.UID, Delete: true},
		{Target: "gone", Kind: api.KindSecret, Name: "gone", UID: "no-such-uid", Delete: true}, // deleted between resolve and delete
		{Target: "d", Kind: api.KindSecret, Name: "d", UID: deleted.UID, Delete: true},
	}}
	if err := bound(c).deleteAll(ctx, cl, Decision{Resolution: res}); err != nil {
		t.Fatalf("deleteAll: %v", err)
	}
	got, err := c.Get(ctx, api.KindSecret, "default", "s")
	if err != nil || got.UID != recreated.UID || got.Deleting() {
		t.Fatalf("the object re-created under the evaluated one's name: %v, %v; want it untouched", got, err)
	}
	for _, o := range []struct{ kind, name string }{{api.KindSecret, "d"}, {api.KindCleaner, "c"}} {
		got, err := c.Get(ctx, o.kind, "default", o.name)
		if !errors.Is(err, api.ErrNotFound) && (err != nil || !got.Deleting()) {
			t.Errorf("%s %s not deleted: %v", o.kind, o.name, err)
		}
	}
}

func TestDeleteAll_StopsAtAFailureWithoutDeletingTheCleaner(t *testing.T) {
	ts := servertest.Start(t)
	c := local.New(ts.Registry, identity.System())
	ctx := testkit.Context(t)
	cl, err := client.For[*api.Cleaner](c).Create(ctx, &api.Cleaner{ObjectMeta: api.ObjectMeta{Name: "c", Namespace: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	x, err := c.Create(ctx, testkit.Secret("default", "x", nil))
	if err != nil {
		t.Fatal(err)
	}
	res := Resolution{Found: []Found{{Target: "x", Kind: api.KindSecret, Name: "x", UID: x.UID, Delete: true}}}
	err = bound(refuseDeletes{c}).deleteAll(context.Background(), cl, Decision{Resolution: res})
	if !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("deleteAll = %v, want the refusal", err)
	}
	if got, err := c.Get(ctx, api.KindCleaner, "default", "c"); err != nil || got.Deleting() {
		t.Fatalf("the cleaner was deleted before its targets: %v", err)
	}
}

// refuseDeletes is a client whose deletions of Secrets are refused.
type refuseDeletes struct{ client.Interface }

func (r refuseDeletes) Delete(ctx context.Context, kind, ns, name string, opts api.DeleteOptions) (*api.Object, bool, error) {
	if kind == api.KindSecret {
		return nil, false, api.NewStatus(api.ReasonForbidden, "deletions of secrets refused")
	}
	return r.Interface.Delete(ctx, kind, ns, name, opts)
}

// bound is a controller acting through c, not set up on a term.
func bound(c client.Interface) *Controller {
	ctl := New(Options{})
	ctl.bind(c, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	return ctl
}

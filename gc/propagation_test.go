package gc_test

import (
	"context"
	"errors"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
)

// deleteWith deletes o with the propagation policy and reports whether the
// API removed it at once.
func (e *env) deleteWith(o *api.Object, policy string) bool {
	e.t.Helper()
	_, gone, err := e.c.Delete(context.Background(), o.Kind, o.Namespace, o.Name, api.DeleteOptions{PropagationPolicy: policy})
	if err != nil {
		e.t.Fatalf("delete %s with %s: %v", o.Name, policy, err)
	}
	return gone
}

func TestPropagation_ForegroundOwnerWaitsForItsDependents(t *testing.T) {
	e := newEnv(t, true)
	owner := e.secret("owner")
	dep := e.secret("dep", testkit.OwnedBy(owner), testkit.Finalizers(hold))
	if e.deleteWith(owner, api.PropagationForeground) {
		t.Fatal("a foreground deletion removed the owner at once")
	}
	stop := e.startGC()
	defer stop()
	e.eventually("the dependent deleting", func() string {
		if s := e.state(dep); s != "deleting" {
			return "dependent " + s
		}
		return ""
	})
	if s := e.state(owner); s != "deleting" {
		t.Fatalf("owner is %s while its dependent is still there; want deleting", s)
	}
	e.update(dep, func(o *api.Object) { o.RemoveFinalizer(hold) })
	e.allGone(owner, dep)
}

func TestPropagation_BackgroundOwnerGoesAtOnceAndDependentsAreCollected(t *testing.T) {
	e := newEnv(t, true)
	owner := e.secret("owner")
	dep := e.secret("dep", testkit.OwnedBy(owner))
	grandchild := e.secret("grandchild", testkit.OwnedBy(dep))
	if !e.deleteWith(owner, api.PropagationBackground) {
		t.Fatal("a background deletion of an object without finalizers did not remove it at once")
	}
	if s := e.state(owner); s != "gone" {
		t.Fatalf("owner is %s", s)
	}
	e.startGC()
	e.allGone(dep, grandchild)
}

func TestPropagation_BackgroundOwnerWithAFinalizerWaitsForItOnly(t *testing.T) {
	e := newEnv(t, true)
	owner := e.secret("owner", testkit.Finalizers(hold))
	dep := e.secret("dep", testkit.OwnedBy(owner))
	e.startGC()
	if e.deleteWith(owner, api.PropagationBackground) {
		t.Fatal("an object holding a finalizer was removed at once")
	}
	cur, err := e.get("Secret", ns, owner.Name)
	if err != nil || cur.HasFinalizer(api.FinalizerCascadeDeletion) || !cur.Deleting() {
		t.Fatalf("owner after a background delete: %+v, %v; want deleting without cascade-deletion", cur, err)
	}
	e.update(owner, func(o *api.Object) { o.RemoveFinalizer(hold) })
	e.allGone(owner, dep)
}

func TestPropagation_OrphanReleasesDependentsWhichStay(t *testing.T) {
	e := newEnv(t, true)
	e.startGC()
	owner := e.secret("owner")
	other := e.secret("other")
	only := e.secret("only", testkit.OwnedBy(owner))
	shared := e.secret("shared", testkit.OwnedBy(owner, other))
	if e.deleteWith(owner, api.PropagationOrphan) {
		t.Fatal("an orphan deletion removed the owner before releasing its dependents")
	}
	e.allGone(owner)
	for _, d := range []struct {
		obj  *api.Object
		want []string
	}{{only, nil}, {shared, []string{other.UID}}} {
		cur, err := e.get("Secret", ns, d.obj.Name)
		if err != nil {
			t.Fatalf("%s: %v", d.obj.Name, err)
		}
		var uids []string
		for _, r := range cur.OwnerReferences {
			uids = append(uids, r.UID)
		}
		if cur.Deleting() || len(uids) != len(d.want) || (len(uids) > 0 && uids[0] != d.want[0]) {
			t.Fatalf("%s after its owner was orphan-deleted: deleting=%v owners=%v, want live with %v", d.obj.Name, cur.Deleting(), uids, d.want)
		}
	}
}

func TestPropagation_OrphanFinalizerCannotBeSetByHand(t *testing.T) {
	e := newEnv(t, true)
	_, err := e.c.Create(context.Background(), testkit.Secret(ns, "x", nil, testkit.Finalizers(api.FinalizerOrphan)))
	if !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("create with %s: %v, want Invalid", api.FinalizerOrphan, err)
	}
}

func TestPropagation_BadPolicyIsRefusedAndChangesNothing(t *testing.T) {
	e := newEnv(t, true)
	s := e.secret("s")
	for _, tc := range []struct{ kind, ns, name, policy string }{
		{"Secret", ns, s.Name, "Sideways"},
		{"Namespace", "", ns, api.PropagationOrphan},
	} {
		_, _, err := e.c.Delete(context.Background(), tc.kind, tc.ns, tc.name, api.DeleteOptions{PropagationPolicy: tc.policy})
		if !errors.Is(err, api.ErrBadRequest) {
			t.Fatalf("delete %s %s with %q: %v, want BadRequest", tc.kind, tc.name, tc.policy, err)
		}
	}
	if st := e.state(s); st != "live" {
		t.Fatalf("secret is %s", st)
	}
}

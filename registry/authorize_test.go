package registry_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/storetest"
)

// gadget is a test kind whose hooks record what they are given.
type gadget struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata"`
	Spec           gadgetSpec `json:"spec,omitzero"`
}

type gadgetSpec struct {
	// From names a Secret whose type the create copies into Copied.
	From   string `json:"from,omitempty"`
	Copied string `json:"copied,omitempty"`
	// Author is set by the hooks to the caller and operation.
	Author string `json:"author,omitempty"`
}

// scopedTo is a rule granting a scoped caller verbs on the object its scope
// names ("ns/name").
func scopedTo(verbs ...string) authz.Rule {
	return func(_ context.Context, a authz.Attributes) (authz.Decision, string) {
		if a.User.Scope != "" && a.User.Scope == a.Namespace+"/"+a.Name {
			for _, v := range verbs {
				if v == a.Verb {
					return authz.Allow, ""
				}
			}
		}
		return authz.NoOpinion, ""
	}
}

func gadgetKind() registry.Kind {
	return registry.Define(registry.Spec[*gadget]{
		Kind: "Gadget", Namespaced: true,
		Authorize: scopedTo(authz.VerbGet, authz.VerbCreate, authz.VerbDelete),
		PrepareForCreate: func(ctx context.Context, adm *registry.Admission, g *gadget) error {
			g.Spec.Author = adm.User.Name + ":" + string(adm.Op)
			if g.Spec.From == "" {
				return nil
			}
			// The hook reads a Secret its caller may not read itself.
			s, err := adm.Get.Get(ctx, "Secret", g.Namespace, g.Spec.From)
			if err != nil {
				return err
			}
			var sec api.Secret
			if err := s.Into(&sec); err != nil {
				return err
			}
			g.Spec.Copied = sec.Type
			return nil
		},
		PrepareForDelete: func(_ context.Context, adm *registry.Admission, g *gadget) error {
			g.Spec.Author = adm.User.Name + ":" + string(adm.Op)
			return nil
		},
		Validate: func(_ context.Context, adm *registry.Admission, g *gadget) field.ErrorList {
			if adm.User.Name == "" {
				return field.ErrorList{field.Required(field.NewPath("user"), "hooks get the caller")}
			}
			return nil
		},
		Actions: []registry.Action{{
			Name: "ping", Method: http.MethodPost,
			Authorize: scopedTo("ping"),
			Handle: func(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
				u, _ := identity.From(ctx)
				return registry.ActionResult{Object: u.Name + " pinged " + req.Name}, nil
			},
		}},
	})
}

// newRegistryWith starts a registry serving every kind plus Gadget, with
// the global rules given.
func newRegistryWith(t *testing.T, rules ...authz.Rule) (*registry.Registry, *store.Store) {
	t.Helper()
	s, _ := storetest.Start(t)
	return startOn(t, s, registry.Options{Kinds: append(kinds.All(kinds.Deps{}), gadgetKind()), Authorize: rules}), s
}

func gadgetObj(name, from string) *api.Object {
	return testkit.Object("Gadget", "default", name, testkit.SpecOf(gadgetSpec{From: from}))
}

func TestRegistry_RefusesEveryVerbWithoutACaller(t *testing.T) {
	r, s := newRegistryWith(t)
	sys := sysCtx()
	obj, err := r.Create(sys, testkit.Secret("default", "s", nil))
	if err != nil {
		t.Fatal(err)
	}
	before := revisionOf(t, s)
	k, err := r.Lookup("Gadget")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	calls := map[string]func() error{
		"get":          func() error { _, err := r.Get(ctx, "Secret", "default", "s"); return err },
		"list":         func() error { _, err := r.List(ctx, "Secret", "default", api.ListOptions{}); return err },
		"watch":        func() error { _, err := r.Watch(ctx, "Secret", "default", api.ListOptions{}); return err },
		"create":       func() error { _, err := r.Create(ctx, testkit.Secret("default", "new", nil)); return err },
		"update":       func() error { _, err := r.Update(ctx, obj); return err },
		"updateStatus": func() error { _, err := r.UpdateStatus(ctx, obj); return err },
		"patch":        func() error { _, err := r.Patch(ctx, "Secret", "default", "s", []byte(`{}`), false); return err },
		"delete":       func() error { _, _, err := r.Delete(ctx, "Secret", "default", "s", api.DeleteOptions{}); return err },
		"txn": func() error {
			tx := r.Txn()
			tx.Create(testkit.Secret("default", "new", nil))
			_, err := tx.Commit(ctx)
			return err
		},
		"action": func() error {
			_, err := r.Act(ctx, k, &k.Actions[0], registry.ActionRequest{Namespace: "default", Name: "g"})
			return err
		},
		"unknown kind": func() error { _, err := r.Get(ctx, "Nothing", "", "x"); return err },
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, api.ErrUnauthorized) || !strings.Contains(err.Error(), "no authenticated caller") {
			t.Errorf("%s without a caller: %v, want Unauthorized", name, err)
		}
	}
	if after := revisionOf(t, s); after != before {
		t.Fatal("a call without a caller wrote to the store")
	}
}

func TestRegistry_KindAndActionRulesGrantAScopedCaller(t *testing.T) {
	r, s := newRegistryWith(t)
	sys := sysCtx()
	if _, err := r.Create(sys, testkit.Secret("default", "src", nil)); err != nil {
		t.Fatal(err)
	}
	worker := identity.With(context.Background(), identity.User{Name: "event:default/g1", Scope: "default/g1"})
	// The kind's rule grants create and get of its own Gadget; the hook
	// reads the Secret the worker may not read.
	out, err := r.Create(worker, gadgetObj("g1", "src"))
	if err != nil {
		t.Fatal(err)
	}
	var g gadget
	if err := out.Into(&g); err != nil || g.Spec.Copied != "Opaque" || g.Spec.Author != "event:default/g1:create" {
		t.Fatalf("hooks: %+v %v", g.Spec, err)
	}
	if _, err := r.Get(worker, "Gadget", "default", "g1"); err != nil {
		t.Errorf("get own gadget: %v", err)
	}
	before := revisionOf(t, s)
	refused := map[string]func() error{
		"another gadget": func() error { _, err := r.Get(worker, "Gadget", "default", "g2"); return err },
		"list gadgets":   func() error { _, err := r.List(worker, "Gadget", "default", api.ListOptions{}); return err },
		"update":         func() error { _, err := r.Update(worker, out); return err },
		"a secret":       func() error { _, err := r.Get(worker, "Secret", "default", "src"); return err },
		"force": func() error {
			_, _, err := r.Delete(worker, "Gadget", "default", "g1", api.DeleteOptions{Force: true})
			return err
		},
		"txn": func() error {
			tx := r.Txn()
			tx.Create(gadgetObj("g1-extra", ""))
			_, err := tx.Commit(worker)
			return err
		},
	}
	for name, call := range refused {
		if err := call(); !errors.Is(err, api.ErrForbidden) || !strings.Contains(err.Error(), "user event:default/g1 (scope default/g1) may not") {
			t.Errorf("%s: %v, want Forbidden naming the caller", name, err)
		}
	}
	if after := revisionOf(t, s); after != before {
		t.Fatal("a refused call wrote to the store")
	}
	// The action's rule grants its verb on the worker's own gadget only.
	k, _ := r.Lookup("gadgets")
	res, err := r.Act(worker, k, &k.Actions[0], registry.ActionRequest{Namespace: "default", Name: "g1"})
	if err != nil || res.Object != "event:default/g1 pinged g1" {
		t.Fatalf("own action: %+v %v", res, err)
	}
	if _, err := r.Act(worker, k, &k.Actions[0], registry.ActionRequest{Namespace: "default", Name: "g2"}); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("action on another gadget: %v", err)
	}
	// Delete marks it, through the delete hook, as the worker.
	del, gone, err := r.Delete(worker, "Gadget", "default", "g1", api.DeleteOptions{})
	if err != nil || gone {
		t.Fatalf("delete own gadget: %v", err)
	}
	if err := del.Into(&g); err != nil || g.Spec.Author != "event:default/g1:delete" {
		t.Fatalf("delete hook: %+v %v", g.Spec, err)
	}
}

func TestRegistry_GlobalRulesAndFailClosedDefault(t *testing.T) {
	alice := identity.With(context.Background(), identity.User{Name: "alice"})
	// With no rule, a user who is not an admin may do nothing.
	r, _ := newRegistryWith(t)
	if _, err := r.List(alice, "Secret", "default", api.ListOptions{}); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("no rules: %v, want Forbidden", err)
	}
	// A global rule grants her everything, except forcing a deletion.
	r, _ = newRegistryWith(t, authz.AllowUnscoped)
	if _, err := r.Create(alice, testkit.Secret("default", "mine", nil)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Delete(alice, "Secret", "default", "mine", api.DeleteOptions{Force: true}); !errors.Is(err, api.ErrForbidden) ||
		!strings.Contains(err.Error(), "only admins may force a deletion") {
		t.Fatalf("forced deletion by a user: %v", err)
	}
	if _, gone, err := r.Delete(sysCtx(), "Secret", "default", "mine", api.DeleteOptions{Force: true}); err != nil || !gone {
		t.Fatalf("forced deletion by the system: %v", err)
	}
}

func TestRegistry_HookGetterFailureEndsTheWrite(t *testing.T) {
	r, s := newRegistryWith(t)
	before := revisionOf(t, s)
	if _, err := r.Create(sysCtx(), gadgetObj("g", "missing")); !errors.Is(err, api.ErrNotFound) || !strings.Contains(err.Error(), `Secret "missing"`) {
		t.Fatalf("hook reading a missing secret: %v", err)
	}
	if revisionOf(t, s) != before {
		t.Fatal("written")
	}
}

func TestRegistry_StoreFailuresBecomeUnavailableAndTimeout(t *testing.T) {
	r, s := newRegistryWith(t)
	expired, cancel := context.WithDeadline(sysCtx(), time.Now().Add(-time.Second))
	defer cancel()
	// A read changes nothing: past its deadline it is ServiceUnavailable;
	// a write past its deadline may have been sent: Timeout.
	if _, err := r.Get(expired, "Secret", "default", "x"); api.ReasonOf(err) != api.ReasonUnavailable {
		t.Errorf("get past its deadline: %v, want ServiceUnavailable", err)
	}
	if _, err := r.Create(expired, testkit.Secret("default", "x", nil)); api.ReasonOf(err) != api.ReasonTimeout {
		t.Errorf("create past its deadline: %v, want Timeout", err)
	}
	if err := s.Client().Close(); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"get":    func() error { _, err := r.Get(sysCtx(), "Secret", "default", "x"); return err },
		"list":   func() error { _, err := r.List(sysCtx(), "Secret", "", api.ListOptions{}); return err },
		"create": func() error { _, err := r.Create(sysCtx(), testkit.Secret("default", "x", nil)); return err },
		"txn": func() error {
			tx := r.Txn()
			tx.Create(testkit.Secret("default", "y", nil))
			_, err := tx.Commit(sysCtx())
			return err
		},
	} {
		err := call()
		st := statusOf(t, err)
		if st.Reason != api.ReasonUnavailable || st.Code != http.StatusServiceUnavailable || st.Details == nil || st.Details.RetryAfterSeconds <= 0 {
			t.Errorf("%s on a closed store: %+v, want ServiceUnavailable with RetryAfterSeconds", name, st)
		}
	}
}

package kubecompat_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"cairn.dev/cairn/api"
)

// controller-runtime's client with unstructured objects, as an operator
// written with controller-runtime (and no Go types of cairn's) uses it.

// crClient is a controller-runtime client of the cluster, with its
// defaults (client-go's scheme, a REST mapper from discovery).
func crClient(t *testing.T, c *cluster) client.Client {
	t.Helper()
	cl, err := client.New(c.config(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// object is an empty unstructured object of kind, for Get.
func object(kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: api.Group, Version: api.Version, Kind: kind})
	return u
}

// list is an empty unstructured list of kind, for List.
func list(kind string) *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: api.Group, Version: api.Version, Kind: kind + "List"})
	return l
}

func TestControllerRuntime_UnstructuredClientReadsAndWrites(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	cl := crClient(t, c)
	ns := object("Namespace")
	ns.SetName("demo")
	if err := cl.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*unstructured.Unstructured{
		secret("demo", "a", map[string]string{"app": "web"}),
		secret("demo", "b", map[string]string{"app": "db"}),
		secret("demo", "c", map[string]string{"app": "web"}),
	} {
		if err := cl.Create(ctx, s, client.FieldOwner("operator")); err != nil {
			t.Fatal(err)
		}
		if s.GetUID() == "" {
			t.Errorf("Create did not fill in %s from the server's answer", s.GetName())
		}
	}

	lists := []struct {
		name string
		opts []client.ListOption
		want []string
	}{
		{"namespace", []client.ListOption{client.InNamespace("demo")}, []string{"a", "b", "c"}},
		{"labels", []client.ListOption{client.InNamespace("demo"), client.MatchingLabels{"app": "web"}}, []string{"a", "c"}},
		{"name", []client.ListOption{client.MatchingFields{"metadata.name": "b"}}, []string{"b"}},
		{"labels and name", []client.ListOption{client.MatchingLabels{"app": "web"}, client.MatchingFields{"metadata.name": "c"}}, []string{"c"}},
		{"limit", []client.ListOption{client.InNamespace("demo"), client.Limit(2)}, []string{"a", "b"}},
	}
	for _, tt := range lists {
		t.Run("list by "+tt.name, func(t *testing.T) {
			l := list("Secret")
			if err := cl.List(ctx, l, tt.opts...); err != nil {
				t.Fatal(err)
			}
			if got := names(l); !slices.Equal(got, tt.want) {
				t.Errorf("List = %v, want %v", got, tt.want)
			}
		})
	}
	if err := cl.List(ctx, list("Secret"), client.MatchingFields{"type": "Opaque"}); !apierrors.IsBadRequest(err) {
		t.Errorf("a field the server does not select by: %v, want BadRequest", err)
	}

	a := object("Secret")
	if err := cl.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "a"}, a); err != nil {
		t.Fatal(err)
	}
	a.SetAnnotations(map[string]string{"note": "updated"})
	if err := cl.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	base := a.DeepCopy()
	a.SetLabels(map[string]string{"app": "web", "tier": "front"})
	if err := cl.Patch(ctx, a, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	if err := cl.Patch(ctx, a, client.RawPatch(types.JSONPatchType, []byte(`[{"op":"add","path":"/metadata/labels/zone","value":"eu"}]`))); err != nil {
		t.Fatal(err)
	}
	got := object("Secret")
	if err := cl.Get(ctx, client.ObjectKeyFromObject(a), got); err != nil {
		t.Fatal(err)
	}
	if l := got.GetLabels(); l["tier"] != "front" || l["zone"] != "eu" || got.GetAnnotations()["note"] != "updated" {
		t.Errorf("after update and patches: labels %v, annotations %v", l, got.GetAnnotations())
	}

	// Server-side apply: a conflict with the other manager, then forced.
	applied := secret("demo", "a", map[string]string{"tier": "back"})
	delete(applied.Object, "stringData")
	err := cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied), client.FieldOwner("other"))
	if !apierrors.IsConflict(err) {
		t.Errorf("apply over another manager's field: %v, want a conflict", err)
	}
	if err := cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied), client.FieldOwner("other"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(a), got); err != nil || got.GetLabels()["tier"] != "back" {
		t.Errorf("after the forced apply: %v, %v", got.GetLabels(), err)
	}

	if err := cl.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "nope"}, object("Secret")); !apierrors.IsNotFound(err) {
		t.Errorf("Get of a missing object: %v", err)
	}
}

func TestControllerRuntime_DryRunAllWritesNothing(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	namespace(t, c.dynamic(t), "demo")
	cl := crClient(t, c)
	if err := cl.Create(ctx, secret("demo", "a", nil)); err != nil {
		t.Fatal(err)
	}
	dry := client.NewDryRunClient(cl)
	tests := []struct {
		name  string
		write func() error
	}{
		{"create", func() error { return cl.Create(ctx, secret("demo", "new", nil), client.DryRunAll) }},
		{"dry-run client create", func() error { return dry.Create(ctx, secret("demo", "new", nil)) }},
		{"update", func() error {
			o := object("Secret")
			if err := cl.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "a"}, o); err != nil {
				return err
			}
			o.SetLabels(map[string]string{"x": "y"})
			return cl.Update(ctx, o, client.DryRunAll)
		}},
		{"patch", func() error {
			o := secret("demo", "a", nil)
			return cl.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`)), client.DryRunAll)
		}},
		{"apply", func() error {
			o := secret("demo", "a", map[string]string{"x": "y"})
			return cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("m"), client.DryRunAll)
		}},
		{"delete", func() error {
			return cl.Delete(ctx, secret("demo", "a", nil), client.DryRunAll, client.PropagationPolicy(metav1.DeletePropagationBackground))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := object("Secret")
			if err := cl.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "a"}, before); err != nil {
				t.Fatal(err)
			}
			if err := tt.write(); err != nil {
				t.Fatal(err)
			}
			after := object("Secret")
			if err := cl.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "a"}, after); err != nil ||
				after.GetResourceVersion() != before.GetResourceVersion() || after.GetDeletionTimestamp() != nil {
				t.Errorf("the dry run wrote: %v, %v", after, err)
			}
			if err := cl.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "new"}, object("Secret")); !apierrors.IsNotFound(err) {
				t.Errorf("the dry run created new: %v", err)
			}
		})
	}
}

func TestControllerRuntime_DeletePropagationPolicy(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	namespace(t, c.dynamic(t), "demo")
	cl := crClient(t, c)
	tests := []struct {
		policy        metav1.DeletionPropagation
		wantFinalizer string // "" for gone at once
	}{
		{metav1.DeletePropagationForeground, api.FinalizerCascadeDeletion},
		{metav1.DeletePropagationOrphan, api.FinalizerOrphan},
		{metav1.DeletePropagationBackground, ""},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy), func(t *testing.T) {
			s := secret("demo", "s-"+strings.ToLower(string(tt.policy)), nil)
			if err := cl.Create(ctx, s); err != nil {
				t.Fatal(err)
			}
			if err := cl.Delete(ctx, s, client.PropagationPolicy(tt.policy)); err != nil {
				t.Fatal(err)
			}
			got := object("Secret")
			err := cl.Get(ctx, client.ObjectKeyFromObject(s), got)
			switch {
			case tt.wantFinalizer == "" && !apierrors.IsNotFound(err):
				t.Errorf("after a background deletion: %v, %v", got.Object, err)
			case tt.wantFinalizer != "" && (err != nil || !slices.Equal(got.GetFinalizers(), []string{tt.wantFinalizer})):
				t.Errorf("after the deletion: finalizers %v, %v; want %s", got.GetFinalizers(), err, tt.wantFinalizer)
			}
		})
	}
}

func TestControllerRuntime_DeleteAllOfDeletesTheSelection(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	namespace(t, c.dynamic(t), "demo")
	namespace(t, c.dynamic(t), "other")
	cl := crClient(t, c)
	for _, s := range []*unstructured.Unstructured{
		secret("demo", "a", map[string]string{"app": "web"}),
		secret("demo", "b", map[string]string{"app": "db"}),
		secret("other", "a", map[string]string{"app": "web"}),
	} {
		if err := cl.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	err := cl.DeleteAllOf(ctx, object("Secret"), client.InNamespace("demo"), client.MatchingLabels{"app": "web"},
		client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil {
		t.Fatal(err)
	}
	l := list("Secret")
	if err := cl.List(ctx, l); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range l.Items {
		got = append(got, o.GetNamespace()+"/"+o.GetName())
	}
	if !slices.Equal(got, []string{"demo/b", "other/a"}) {
		t.Errorf("after DeleteAllOf app=web in demo: %v, want [demo/b other/a]", got)
	}
}

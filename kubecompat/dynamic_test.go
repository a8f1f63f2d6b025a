package kubecompat_test

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"cairn.dev/cairn/api"
)

// client-go's dynamic client, as controllers and tools built on
// client-go use it.

// secret is a Secret of namespace ns with one value and labels.
func secret(ns, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": api.Group + "/" + api.Version, "kind": "Secret",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"stringData": map[string]any{"value": name},
	}}
	u.SetLabels(labels)
	return u
}

// namespace creates namespace name.
func namespace(t *testing.T, dc dynamic.Interface, name string) {
	t.Helper()
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": api.Group + "/" + api.Version, "kind": "Namespace", "metadata": map[string]any{"name": name}}}
	if _, err := dc.Resource(gvr("namespaces")).Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// names are the names of a list's items, in order.
func names(l *unstructured.UnstructuredList) []string {
	var out []string
	for _, o := range l.Items {
		out = append(out, o.GetName())
	}
	return out
}

func TestDynamic_WritesReadsAndDeletes(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	dc := c.dynamic(t)
	namespace(t, dc, "demo")
	secrets := dc.Resource(gvr("secrets")).Namespace("demo")

	created, err := secrets.Create(ctx, secret("demo", "a", map[string]string{"app": "web"}), metav1.CreateOptions{FieldManager: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if created.GetUID() == "" || created.GetResourceVersion() == "" || created.GetKind() != "Secret" {
		t.Errorf("created %v", created.Object)
	}
	if _, ok := created.Object["stringData"]; ok {
		t.Errorf("the create returned stringData: %v", created.Object)
	}
	got, err := secrets.Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.GetResourceVersion() != created.GetResourceVersion() {
		t.Fatalf("get: %v, %v", got, err)
	}
	if v, _, _ := unstructured.NestedString(got.Object, "data", "value"); v != "YQ==" {
		t.Errorf("data.value %q, want base64 of a", v)
	}

	got.SetLabels(map[string]string{"app": "web", "tier": "front"})
	updated, err := secrets.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil || updated.GetLabels()["tier"] != "front" || updated.GetResourceVersion() == got.GetResourceVersion() {
		t.Fatalf("update: %v, %v", updated, err)
	}

	patches := []struct {
		name  string
		typ   types.PatchType
		body  string
		label string // the tier label after the patch
	}{
		{"merge", types.MergePatchType, `{"metadata":{"labels":{"tier":"back"}}}`, "back"},
		{"json", types.JSONPatchType, `[{"op":"replace","path":"/metadata/labels/tier","value":"middle"}]`, "middle"},
		{"apply", types.ApplyPatchType, `{"apiVersion":"cairn.dev/v1alpha1","kind":"Secret","metadata":{"name":"a","namespace":"demo","labels":{"tier":"applied"}}}`, "applied"},
	}
	for _, p := range patches {
		t.Run("patch "+p.name, func(t *testing.T) {
			opts := metav1.PatchOptions{}
			if p.typ == types.ApplyPatchType {
				opts.FieldManager, opts.Force = "applier", ptr.To(true)
			}
			out, err := secrets.Patch(ctx, "a", p.typ, []byte(p.body), opts)
			if err != nil {
				t.Fatal(err)
			}
			if l := out.GetLabels(); l["tier"] != p.label || l["app"] != "web" {
				t.Errorf("labels %v, want tier=%s and app=web", l, p.label)
			}
		})
	}
	// The apply was recorded for its manager.
	got, _ = secrets.Get(ctx, "a", metav1.GetOptions{})
	if !slices.ContainsFunc(got.GetManagedFields(), func(m metav1.ManagedFieldsEntry) bool { return m.Manager == "applier" && m.Operation == "Apply" }) {
		t.Errorf("managedFields %v lack applier's apply", got.GetManagedFields())
	}
	// A server-side apply of a new object creates it.
	applied, err := secrets.Apply(ctx, "b", secret("demo", "b", map[string]string{"app": "db"}), metav1.ApplyOptions{FieldManager: "applier"})
	if err != nil || applied.GetUID() == "" {
		t.Fatalf("apply of a new object: %v, %v", applied, err)
	}

	if err := secrets.Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(got.GetUID())},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Get(ctx, "a", metav1.GetOptions{}); err == nil {
		t.Error("a is still there after its deletion")
	}
}

func TestDynamic_ListAndWatchHonourSelectors(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	dc := c.dynamic(t)
	namespace(t, dc, "demo")
	namespace(t, dc, "other")
	all := dc.Resource(gvr("secrets"))
	for _, s := range []*unstructured.Unstructured{
		secret("demo", "a", map[string]string{"app": "web"}),
		secret("demo", "b", map[string]string{"app": "db"}),
		secret("other", "a", map[string]string{"app": "web"}),
		secret("other", "c", nil),
	} {
		if _, err := all.Namespace(s.GetNamespace()).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name            string
		ns              string
		labels, fields  string
		want            []string // namespace/name
		wantErrInFields bool
	}{
		{"everything", "", "", "", []string{"demo/a", "demo/b", "other/a", "other/c"}, false},
		{"one namespace", "demo", "", "", []string{"demo/a", "demo/b"}, false},
		{"label", "", "app=web", "", []string{"demo/a", "other/a"}, false},
		{"label exists", "", "app", "", []string{"demo/a", "demo/b", "other/a"}, false},
		{"label not in", "", "app notin (web)", "", []string{"demo/b", "other/c"}, false},
		{"name", "", "", "metadata.name=a", []string{"demo/a", "other/a"}, false},
		{"name not", "demo", "", "metadata.name!=a", []string{"demo/b"}, false},
		{"namespace field", "", "", "metadata.namespace=other", []string{"other/a", "other/c"}, false},
		{"label and field", "", "app=web", "metadata.namespace=demo", []string{"demo/a"}, false},
		{"an unsupported field", "", "", "type=Opaque", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := all.Namespace(tt.ns).List(ctx, metav1.ListOptions{LabelSelector: tt.labels, FieldSelector: tt.fields})
			if tt.wantErrInFields {
				if err == nil {
					t.Fatalf("list with fieldSelector %q: %v, want a refusal", tt.fields, names(l))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range l.Items {
				got = append(got, o.GetNamespace()+"/"+o.GetName())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("list = %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("watch", func(t *testing.T) {
		l, err := all.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rv := l.GetResourceVersion()
		watchers := map[string]watch.Interface{}
		for name, opts := range map[string]metav1.ListOptions{
			"name":  {FieldSelector: "metadata.name=a", ResourceVersion: rv},
			"label": {LabelSelector: "app=db", ResourceVersion: rv},
		} {
			w, err := all.Namespace("demo").Watch(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			watchers[name] = w
		}
		// Changes to every secret of demo, in order: only some are seen.
		for _, n := range []string{"b", "a"} {
			if _, err := all.Namespace("demo").Patch(ctx, n, types.MergePatchType, []byte(`{"metadata":{"annotations":{"seen":"yes"}}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := all.Namespace("demo").Create(ctx, secret("demo", "d", map[string]string{"app": "db"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := all.Namespace("demo").Delete(ctx, "a", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
		want := map[string][]string{
			"name":  {"MODIFIED a", "DELETED a"},
			"label": {"MODIFIED b", "ADDED d"},
		}
		for name, w := range watchers {
			// Read what is wanted, then a little longer for what is not.
			var got []string
			timeout, extra := time.After(5*time.Second), (<-chan time.Time)(nil)
		read:
			for {
				select {
				case e := <-w.ResultChan():
					if e.Type == watch.Bookmark {
						t.Errorf("%s: a BOOKMARK without allowWatchBookmarks", name)
						continue
					}
					got = append(got, string(e.Type)+" "+e.Object.(*unstructured.Unstructured).GetName())
				case <-timeout:
					break read
				case <-extra:
					break read
				}
				if len(got) == len(want[name]) {
					extra = time.After(300 * time.Millisecond)
				}
			}
			if !slices.Equal(got, want[name]) {
				t.Errorf("watch with %s selector saw %v, want %v", name, got, want[name])
			}
		}
	})
}

func TestDynamic_TimeoutSecondsEndsTheWatch(t *testing.T) {
	c := startServer(t)
	start := time.Now()
	w, err := c.dynamic(t).Resource(gvr("leases")).Watch(context.Background(), metav1.ListOptions{TimeoutSeconds: ptr.To[int64](1)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case _, ok := <-w.ResultChan():
		if ok {
			t.Error("an event on an empty watch")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch outlived its timeoutSeconds by far")
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Errorf("the watch ended after %s, before its timeout", d)
	}
}

func TestDynamic_DryRunWritesNothing(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	dc := c.dynamic(t)
	namespace(t, dc, "demo")
	secrets := dc.Resource(gvr("secrets")).Namespace("demo")
	if _, err := secrets.Create(ctx, secret("demo", "a", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dry := []string{metav1.DryRunAll}
	tests := []struct {
		name  string
		write func() (*unstructured.Unstructured, error)
	}{
		{"create", func() (*unstructured.Unstructured, error) {
			return secrets.Create(ctx, secret("demo", "new", nil), metav1.CreateOptions{DryRun: dry})
		}},
		{"update", func() (*unstructured.Unstructured, error) {
			o, err := secrets.Get(ctx, "a", metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			o.SetLabels(map[string]string{"x": "y"})
			return secrets.Update(ctx, o, metav1.UpdateOptions{DryRun: dry})
		}},
		{"merge patch", func() (*unstructured.Unstructured, error) {
			return secrets.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{DryRun: dry})
		}},
		{"apply", func() (*unstructured.Unstructured, error) {
			return secrets.Apply(ctx, "a", secret("demo", "a", map[string]string{"x": "y"}), metav1.ApplyOptions{FieldManager: "m", DryRun: dry})
		}},
		{"delete", func() (*unstructured.Unstructured, error) {
			return nil, secrets.Delete(ctx, "a", metav1.DeleteOptions{DryRun: dry, PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := secrets.Get(ctx, "a", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out, err := tt.write()
			if err != nil {
				t.Fatal(err)
			}
			// The would-be result: the new object, or a with the label.
			if out != nil && out.GetName() != "new" && out.GetLabels()["x"] != "y" {
				t.Errorf("the dry run returned %v, not the would-be object", out.Object)
			}
			after, err := secrets.Get(ctx, "a", metav1.GetOptions{})
			if err != nil || after.GetResourceVersion() != before.GetResourceVersion() || after.GetDeletionTimestamp() != nil {
				t.Errorf("the dry run wrote: %v, %v", after, err)
			}
			if _, err := secrets.Get(ctx, "new", metav1.GetOptions{}); err == nil {
				t.Error("the dry run created new")
			}
		})
	}
}

// TestDynamic_PropagationPolicySetsTheFinalizer deletes an owner with
// each policy on a server without controllers: what is left is the mark
// the garbage collector would act on.
func TestDynamic_PropagationPolicySetsTheFinalizer(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	dc := c.dynamic(t)
	namespace(t, dc, "demo")
	secrets := dc.Resource(gvr("secrets")).Namespace("demo")
	tests := []struct {
		policy        *metav1.DeletionPropagation
		wantFinalizer string // "" for gone at once
	}{
		{nil, api.FinalizerCascadeDeletion}, // cairn's default
		{ptr.To(metav1.DeletePropagationForeground), api.FinalizerCascadeDeletion},
		{ptr.To(metav1.DeletePropagationOrphan), api.FinalizerOrphan},
		{ptr.To(metav1.DeletePropagationBackground), ""},
	}
	for i, tt := range tests {
		name := "s" + string(rune('0'+i))
		t.Run(string(ptr.Deref(tt.policy, "default")), func(t *testing.T) {
			if _, err := secrets.Create(ctx, secret("demo", name, nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := secrets.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: tt.policy}); err != nil {
				t.Fatal(err)
			}
			o, err := secrets.Get(ctx, name, metav1.GetOptions{})
			switch {
			case tt.wantFinalizer == "" && err == nil:
				t.Errorf("still there: %v", o.Object)
			case tt.wantFinalizer != "" && (err != nil || o.GetDeletionTimestamp() == nil || !slices.Equal(o.GetFinalizers(), []string{tt.wantFinalizer})):
				t.Errorf("after the deletion: %v, %v; want it marked with %s", o, err, tt.wantFinalizer)
			}
		})
	}
}

// TestDynamic_DeleteCollectionDeletesTheSelection deletes by label and
// field selectors, dry run first.
func TestDynamic_DeleteCollectionDeletesTheSelection(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	dc := c.dynamic(t)
	namespace(t, dc, "demo")
	secrets := dc.Resource(gvr("secrets")).Namespace("demo")
	for _, s := range []*unstructured.Unstructured{
		secret("demo", "a", map[string]string{"app": "web"}),
		secret("demo", "b", map[string]string{"app": "web"}),
		secret("demo", "c", map[string]string{"app": "db"}),
	} {
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	remaining := func() []string {
		l, err := secrets.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return names(l)
	}
	background := ptr.To(metav1.DeletePropagationBackground)
	if err := secrets.DeleteCollection(ctx, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}, PropagationPolicy: background},
		metav1.ListOptions{LabelSelector: "app=web"}); err != nil {
		t.Fatal(err)
	}
	if got := remaining(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("a dry-run DeleteCollection deleted: %v left", got)
	}
	if err := secrets.DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: background},
		metav1.ListOptions{LabelSelector: "app=web", FieldSelector: "metadata.name!=b"}); err != nil {
		t.Fatal(err)
	}
	if got := remaining(); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("after DeleteCollection of app=web but b: %v left, want [b c]", got)
	}
}

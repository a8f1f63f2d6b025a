package kubecompat_test

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"cairn.dev/cairn/api"
)

// client-go's metadata client, which reads objects as
// PartialObjectMetadata: Kubernetes' garbage collector and
// controller-runtime's metadata-only watches are built on it.

func TestMetadata_ClientGoMetadataClientGetsListsAndWatches(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	namespace(t, c.dynamic(t), "demo")
	secrets := c.dynamic(t).Resource(gvr("secrets")).Namespace("demo")
	if _, err := secrets.Create(ctx, secret("demo", "a", map[string]string{"app": "web"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mc, err := metadata.NewForConfig(c.config())
	if err != nil {
		t.Fatal(err)
	}
	res := mc.Resource(gvr("secrets"))

	m, err := res.Namespace("demo").Get(ctx, "a", metav1.GetOptions{})
	if err != nil || m.Name != "a" || m.Labels["app"] != "web" || m.UID == "" {
		t.Fatalf("Get: %+v, %v", m, err)
	}
	l, err := res.List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(l.Items) != 1 || l.Items[0].Name != "a" || l.ResourceVersion == "" {
		t.Fatalf("List: %+v, %v", l, err)
	}
	w, err := res.Namespace("demo").Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := secrets.Patch(ctx, "a", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"db"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-w.ResultChan():
		m, ok := e.Object.(*metav1.PartialObjectMetadata)
		if e.Type != watch.Modified || !ok || m.Name != "a" || m.Labels["app"] != "db" {
			t.Errorf("watch event %s %#v, want the change as PartialObjectMetadata", e.Type, e.Object)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event")
	}
}

func TestMetadata_InformerSeesAddsUpdatesAndDeletes(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	leases := c.dynamic(t).Resource(gvr("leases"))
	if _, err := leases.Create(ctx, lease("before", "a", 15), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mc, err := metadata.NewForConfig(c.config())
	if err != nil {
		t.Fatal(err)
	}
	factory := metadatainformer.NewSharedInformerFactory(mc, 0)
	inf := factory.ForResource(gvr("leases")).Informer()
	e := make(events, 100)
	name := func(o any) string {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		return o.(*metav1.PartialObjectMetadata).Name
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { e <- "add " + name(o) },
		UpdateFunc: func(_, o any) { e <- "update " + name(o) },
		DeleteFunc: func(o any) { e <- "delete " + name(o) },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() {
		close(stop)
		factory.Shutdown()
	})
	e.expect(t, "add before")
	if _, err := leases.Create(ctx, lease("new", "a", 15), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect(t, "add new")
	if _, err := leases.Patch(ctx, "new", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect(t, "update new")
	if err := leases.Delete(ctx, "new", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	e.expect(t, "delete new")
}

func TestMetadata_ControllerRuntimeReadsPartialObjectMetadata(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	namespace(t, c.dynamic(t), "demo")
	cl := crClient(t, c)
	for _, n := range []string{"a", "b"} {
		if err := cl.Create(ctx, secret("demo", n, map[string]string{"app": n})); err != nil {
			t.Fatal(err)
		}
	}
	gvk := schema.GroupVersionKind{Group: api.Group, Version: api.Version, Kind: "Secret"}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	if err := cl.Get(ctx, client.ObjectKey{Namespace: "demo", Name: "a"}, m); err != nil || m.Labels["app"] != "a" {
		t.Fatalf("Get: %+v, %v", m, err)
	}
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(gvk)
	if err := cl.List(ctx, l, client.InNamespace("demo"), client.MatchingLabels{"app": "b"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, i := range l.Items {
		got = append(got, i.Name)
	}
	if !slices.Equal(got, []string{"b"}) {
		t.Errorf("List = %v, want [b]", got)
	}
}

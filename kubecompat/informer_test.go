package kubecompat_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// client-go's dynamic shared informers, with their default settings, as
// every controller built on client-go runs them.

// events collects an informer's notifications as "add NAME", "update
// NAME", "delete NAME".
type events chan string

func (e events) handler() cache.ResourceEventHandlerFuncs {
	name := func(o any) string {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		return o.(*unstructured.Unstructured).GetName()
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { e <- "add " + name(o) },
		UpdateFunc: func(_, o any) { e <- "update " + name(o) },
		DeleteFunc: func(o any) { e <- "delete " + name(o) },
	}
}

// expect reads the next notifications and fails the test unless they are
// want, in order.
func (e events) expect(t *testing.T, want ...string) {
	t.Helper()
	var got []string
	timeout := time.After(10 * time.Second)
	for len(got) < len(want) {
		select {
		case s := <-e:
			got = append(got, s)
		case <-timeout:
			t.Fatalf("notifications %v, want %v", got, want)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("notifications %v, want %v", got, want)
	}
}

// none fails the test if a notification comes within a short while.
func (e events) none(t *testing.T) {
	t.Helper()
	select {
	case s := <-e:
		t.Errorf("unexpected notification %q", s)
	case <-time.After(300 * time.Millisecond):
	}
}

// startInformer runs an informer of resource built by factory until the
// test ends, and waits for its cache to sync.
func startInformer(t *testing.T, factory dynamicinformer.DynamicSharedInformerFactory, resource string, e events) cache.SharedIndexInformer {
	t.Helper()
	inf := factory.ForResource(gvr(resource)).Informer()
	if _, err := inf.AddEventHandler(e.handler()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if !cache.WaitForCacheSync(sctx.Done(), inf.HasSynced) {
		t.Fatal("the informer's cache did not sync")
	}
	return inf
}

func TestInformer_DefaultSettingsSeeAddsUpdatesAndDeletes(t *testing.T) {
	tests := []struct {
		name      string
		watchList bool // client-go's WatchListClient (on by default in 0.37)
	}{
		{"watch-list", true},
		{"list then watch", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, tt.watchList)
			c := startServer(t)
			ctx := context.Background()
			var reqs requests
			dc, err := dynamic.NewForConfig(reqs.record(c.config()))
			if err != nil {
				t.Fatal(err)
			}
			leases := dc.Resource(gvr("leases"))
			if _, err := leases.Create(ctx, lease("before", "a", 15), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			e := make(events, 100)
			inf := startInformer(t, dynamicinformer.NewDynamicSharedInformerFactory(dc, 0), "leases", e)
			e.expect(t, "add before")
			if keys := inf.GetStore().ListKeys(); !slices.Equal(keys, []string{"before"}) {
				t.Errorf("the informer's cache holds %v", keys)
			}

			// The informer started the way the feature says.
			watch := func(r *http.Request) bool {
				return r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1"
			}
			streamed := reqs.find(func(r *http.Request) bool {
				return watch(r) && r.URL.Query().Get("sendInitialEvents") == "true"
			})
			listed := reqs.find(func(r *http.Request) bool {
				return r.Method == http.MethodGet && r.URL.Path == "/apis/cairn.dev/v1alpha1/leases" && !watch(r)
			})
			if tt.watchList && (len(streamed) == 0 || len(listed) != 0) {
				t.Errorf("with WatchListClient: %d watch-list requests, %d lists", len(streamed), len(listed))
			}
			if !tt.watchList && (len(streamed) != 0 || len(listed) == 0) {
				t.Errorf("without WatchListClient: %d watch-list requests, %d lists", len(streamed), len(listed))
			}

			if _, err := leases.Create(ctx, lease("new", "a", 15), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			e.expect(t, "add new")
			if _, err := leases.Patch(ctx, "new", types.MergePatchType, []byte(`{"spec":{"holderIdentity":"b"}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			e.expect(t, "update new")
			if err := leases.Delete(ctx, "new", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
				t.Fatal(err)
			}
			e.expect(t, "delete new")
			// A cut connection: the informer resumes and misses nothing.
			c.srv.CloseWatches()
			if _, err := leases.Patch(ctx, "before", types.MergePatchType, []byte(`{"spec":{"holderIdentity":"b"}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			e.expect(t, "update before")
			e.none(t)
		})
	}
}

func TestInformer_FilteredSeesOnlyItsSelection(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	dc := c.dynamic(t)
	namespace(t, dc, "demo")
	namespace(t, dc, "other")
	secrets := dc.Resource(gvr("secrets"))
	create := func(ns, name string, labels map[string]string) {
		t.Helper()
		if _, err := secrets.Namespace(ns).Create(ctx, secret(ns, name, labels), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("demo", "web-1", map[string]string{"app": "web"})
	create("demo", "db-1", map[string]string{"app": "db"})
	create("other", "web-2", map[string]string{"app": "web"})

	e := make(events, 100)
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, "demo", func(o *metav1.ListOptions) { o.LabelSelector = "app=web" })
	startInformer(t, factory, "secrets", e)
	e.expect(t, "add web-1")
	create("other", "web-3", map[string]string{"app": "web"})
	create("demo", "db-2", map[string]string{"app": "db"})
	create("demo", "web-4", map[string]string{"app": "web"})
	e.expect(t, "add web-4")
	// Losing the label is a deletion for a selecting informer.
	if _, err := secrets.Namespace("demo").Patch(ctx, "web-4", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"db"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.expect(t, "delete web-4")
	e.none(t)

	// By name: what kubectl wait and get NAME -w watch.
	byName := make(events, 100)
	startInformer(t, dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, "demo", func(o *metav1.ListOptions) {
		o.FieldSelector = "metadata.name=db-5"
	}), "secrets", byName)
	create("demo", "db-6", nil)
	create("demo", "db-5", nil)
	byName.expect(t, "add db-5")
	byName.none(t)
}

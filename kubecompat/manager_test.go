package kubecompat_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A controller written with controller-runtime, on unstructured objects
// (no Go types of cairn's), run by its manager against cairn: its cache
// lists and watches, its client writes.

// greeter keeps, for every DataObject, a Secret "<name>-greeting" that
// the DataObject owns (a controller reference). Its finalizer holds a
// deleted DataObject until the greeting is gone.
type greeter struct{ client.Client }

const greeterFinalizer = "greeter.example.com/cleanup"

func (g greeter) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	owner := object("DataObject")
	if err := g.Get(ctx, req.NamespacedName, owner); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if owner.GetDeletionTimestamp() != nil {
		s := object2("Secret", client.ObjectKey{Namespace: req.Namespace, Name: req.Name + "-greeting"})
		if err := g.Delete(ctx, s, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
		if controllerutil.RemoveFinalizer(owner, greeterFinalizer) {
			return reconcile.Result{}, g.Update(ctx, owner)
		}
		return reconcile.Result{}, nil
	}
	if controllerutil.AddFinalizer(owner, greeterFinalizer) {
		if err := g.Update(ctx, owner); err != nil {
			return reconcile.Result{}, err
		}
	}
	s := object("Secret")
	s.SetNamespace(req.Namespace)
	s.SetName(req.Name + "-greeting")
	_, err := controllerutil.CreateOrUpdate(ctx, g.Client, s, func() error {
		s.SetLabels(map[string]string{"greeting-for": req.Name})
		return controllerutil.SetControllerReference(owner, s, g.Scheme())
	})
	return reconcile.Result{}, err
}

func TestControllerRuntime_ManagerRunsAController(t *testing.T) {
	c := startServer(t)
	ctx := context.Background()
	namespace(t, c.dynamic(t), "demo")
	mgr, err := manager.New(c.config(), manager.Options{
		Scheme:                 runtime.NewScheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		Logger:                 testr.New(t), // shown when the test fails
	})
	if err != nil {
		t.Fatal(err)
	}
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(object("Secret").GroupVersionKind())
	err = builder.ControllerManagedBy(mgr).Named("greeter").
		For(object("DataObject")).
		Owns(secret, builder.OnlyMetadata). // a metadata-only watch
		Complete(greeter{mgr.GetClient()})
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	cl := crClient(t, c)
	do := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cairn.dev/v1alpha1", "kind": "DataObject",
		"metadata": map[string]any{"name": "hello", "namespace": "demo"}, "data": "world"}}
	if err := cl.Create(ctx, do); err != nil {
		t.Fatal(err)
	}
	greeting := client.ObjectKey{Namespace: "demo", Name: "hello-greeting"}
	owned := func() string {
		s := object("Secret")
		if err := cl.Get(ctx, greeting, s); err != nil {
			return "no greeting: " + err.Error()
		}
		if refs := s.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != do.GetUID() || !ptr.Deref(refs[0].Controller, false) {
			return "the greeting's owners: " + s.GetName()
		}
		return ""
	}
	eventually(t, 10*time.Second, owned)

	// The controller puts back what it owns (seen by the metadata-only
	// watch).
	if err := cl.Delete(ctx, object2("Secret", greeting), client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() string {
		s := object("Secret")
		if err := cl.Get(ctx, greeting, s); apierrors.IsNotFound(err) || s.GetDeletionTimestamp() != nil {
			return "the greeting was not put back"
		}
		return owned()
	})

	// Deleted, the DataObject waits for its finalizer: the controller
	// deletes the greeting, then lets it go.
	if err := cl.Get(ctx, client.ObjectKeyFromObject(do), do); err != nil || !slices.Contains(do.GetFinalizers(), greeterFinalizer) {
		t.Fatalf("the DataObject's finalizers: %v, %v", do.GetFinalizers(), err)
	}
	if err := cl.Delete(ctx, do, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() string {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(do), object("DataObject")); !apierrors.IsNotFound(err) {
			return "the DataObject is still there"
		}
		if err := cl.Get(ctx, greeting, object("Secret")); !apierrors.IsNotFound(err) {
			return "the greeting is still there"
		}
		return ""
	})
}

// object2 is an unstructured object of kind named by key.
func object2(kind string, key client.ObjectKey) *unstructured.Unstructured {
	u := object(kind)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	return u
}

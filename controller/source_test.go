package controller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

// localClient is an in-process client over the registry of a real test
// server (embedded etcd): controllers need no HTTP.
func localClient(t *testing.T) client.Interface {
	t.Helper()
	return local.New(servertest.Start(t).Registry, identity.System())
}

// keySet records reconciled keys.
type keySet struct {
	mu   sync.Mutex
	keys map[string]int
}

func (k *keySet) Reconcile(_ context.Context, key string) (controller.Result, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys[key]++
	return controller.Result{}, nil
}

func (k *keySet) count(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys[key]
}

// wait waits until key has been reconciled at least n times.
func (k *keySet) wait(t *testing.T, key string, n int) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, fmt.Sprintf("%d reconciles of %s", n, key), func() bool { return k.count(key) >= n })
}

func TestEnqueueFromInformer_ReconcilesChangedObjectsAndOwners(t *testing.T) {
	c := localClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	owner, err := c.Create(ctx, testkit.Secret("default", "owner", nil))
	if err != nil {
		t.Fatal(err)
	}

	objects := &keySet{keys: map[string]int{}}
	owners := &keySet{keys: map[string]int{}}
	objCtrl := controller.New("objects", objects, controller.Options{})
	ownerCtrl := controller.New("owners", owners, controller.Options{})
	inf := informer.New(c, api.KindSecret, "default", informer.Options{})
	controller.EnqueueFromInformer(inf, objCtrl, nil)
	controller.EnqueueFromInformer(inf, ownerCtrl, controller.ControllerOwnerKey(api.KindSecret))
	infDone := make(chan struct{})
	go func() {
		defer close(infDone)
		inf.Run(ctx)
	}()
	defer func() { cancel(); <-infDone }()
	start(t, objCtrl)
	start(t, ownerCtrl)

	objects.wait(t, "default/owner", 1) // from the initial list
	if _, err := c.Create(ctx, testkit.Secret("default", "dep", nil, testkit.ControlledBy(owner))); err != nil {
		t.Fatal(err)
	}
	objects.wait(t, "default/dep", 1)
	owners.wait(t, "default/owner", 1)
	if _, _, err := c.Delete(ctx, api.KindSecret, "default", "dep", api.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	objects.wait(t, "default/dep", 2)
	owners.wait(t, "default/owner", 2)

	if n := owners.count("default/dep"); n != 0 {
		t.Errorf("owner controller reconciled the dependent's own key %d times", n)
	}
}

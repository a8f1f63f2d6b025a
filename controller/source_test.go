package controller_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store/storetest"
)

// localClient is an in-process client over a registry on a real embedded
// etcd: controllers need no HTTP server.
func localClient(t *testing.T) client.Interface {
	t.Helper()
	s, _ := storetest.Start(t)
	enc, err := registry.LoadOrCreateKey(filepath.Join(t.TempDir(), "key"))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New(s, registry.Options{Kinds: kinds.All(kinds.Deps{}), Encryption: enc})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := reg.Init(ctx); err != nil {
		t.Fatal(err)
	}
	return client.NewLocal(reg)
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

func (k *keySet) wait(t *testing.T, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		k.mu.Lock()
		got := k.keys[key]
		k.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s reconciled %d times, want >= %d", key, got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestEnqueueFromInformer_ReconcilesChangedObjectsAndOwners(t *testing.T) {
	c := localClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	owner, err := c.Create(ctx, &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Secret"},
		ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "owner"}})
	if err != nil {
		t.Fatal(err)
	}

	objects := &keySet{keys: map[string]int{}}
	owners := &keySet{keys: map[string]int{}}
	objCtrl := controller.New("objects", objects, controller.Options{})
	ownerCtrl := controller.New("owners", owners, controller.Options{})
	inf := informer.New(c, "Secret", "default", informer.Options{})
	controller.EnqueueFromInformer(inf, objCtrl, nil)
	controller.EnqueueFromInformer(inf, ownerCtrl, controller.ControllerOwnerKey("Secret"))
	infDone := make(chan struct{})
	go func() {
		defer close(infDone)
		inf.Run(ctx)
	}()
	defer func() { cancel(); <-infDone }()
	start(t, objCtrl)
	start(t, ownerCtrl)

	objects.wait(t, "default/owner", 1) // from the initial list
	dep := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Secret"},
		ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "dep", OwnerReferences: []api.OwnerReference{
			{APIVersion: api.APIVersion, Kind: "Secret", Name: "owner", UID: owner.UID, Controller: true}}}}
	if _, err := c.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	objects.wait(t, "default/dep", 1)
	owners.wait(t, "default/owner", 1)
	if _, _, err := c.Delete(ctx, "Secret", "default", "dep", api.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	objects.wait(t, "default/dep", 2)
	owners.wait(t, "default/owner", 2)

	owners.mu.Lock()
	defer owners.mu.Unlock()
	if n := owners.keys["default/dep"]; n != 0 {
		t.Errorf("owner controller reconciled the dependent's own key %d times", n)
	}
}

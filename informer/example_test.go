package informer_test

import (
	"context"
	"errors"
	"fmt"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/informer"
)

// A process builds one Factory; each controller takes the shared informer
// of the kinds it watches, adds the indexes it needs (a built-in index may
// already have been added by another controller), and looks objects up by
// index instead of scanning the cache.
func ExampleFactory() {
	var c client.Interface // the process's client, HTTP or in-process
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	f := informer.NewFactory(c, informer.Options{})
	defer f.Shutdown() // waits for every informer goroutine

	secrets := f.For(api.KindSecret)
	err := secrets.AddIndex(informer.OwnerUIDIndex, informer.IndexOwnerUID)
	if err != nil && !errors.Is(err, informer.ErrIndexExists) {
		panic(err)
	}
	f.Start(ctx)
	if !f.WaitForSync(ctx) {
		return
	}
	dependents, _ := secrets.ByIndex(informer.OwnerUIDIndex, "uid-of-some-owner")
	for _, d := range dependents {
		fmt.Println(api.Key(d.Namespace, d.Name))
	}
}

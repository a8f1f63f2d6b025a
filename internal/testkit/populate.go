package testkit

import (
	"context"
	"fmt"
	"sync"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/registry"
)

// perNamespace is how many objects Populate puts in one namespace: within
// the registry's default limit (registry.DefaultNamespaceMaxObjects).
const perNamespace = 40_000

// Populate creates n small Secrets, named "s-0" to "s-<n-1>" and spread
// over namespaces of at most 40,000 objects each (prefix-0, prefix-1, ...,
// created here), as the system, through transactions of
// registry.MaxTxnItems creates committed by workers goroutines. It is the
// fast way to fill a store for tests and benchmarks that need many
// objects; it returns the namespaces, or the first error.
func Populate(ctx context.Context, reg *registry.Registry, prefix string, n, workers int) ([]string, error) {
	ctx = identity.With(ctx, identity.System())
	var namespaces []string
	for i := 0; i*perNamespace < n; i++ {
		ns := fmt.Sprintf("%s-%d", prefix, i)
		if _, err := reg.Create(ctx, Object(api.KindNamespace, "", ns)); err != nil {
			return nil, fmt.Errorf("testkit: create namespace %s: %w", ns, err)
		}
		namespaces = append(namespaces, ns)
	}
	batches := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range max(workers, 1) {
		wg.Go(func() {
			for start := range batches {
				tx := reg.Txn()
				for i := start; i < min(start+registry.MaxTxnItems, n); i++ {
					tx.Create(Secret(namespaces[i/perNamespace], fmt.Sprintf("s-%d", i), nil))
				}
				if _, err := tx.Commit(ctx); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		})
	}
	for start := 0; start < n && ctx.Err() == nil; start += registry.MaxTxnItems {
		batches <- start
	}
	close(batches)
	wg.Wait()
	if first != nil {
		return nil, fmt.Errorf("testkit: populate: %w", first)
	}
	return namespaces, nil
}

package gc_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
)

// BenchmarkCollector_DeleteOwnerWith10000Dependents measures the time from
// the DELETE of an owner to its disappearance, which waits for all of its
// dependents to be gone (in-process client, embedded etcd).
func BenchmarkCollector_DeleteOwnerWith10000Dependents(b *testing.B) {
	const n = 10000
	for b.Loop() {
		b.StopTimer()
		e := newEnv(b, false)
		e.startGC()
		owner := e.secret("owner")
		var wg sync.WaitGroup
		sem := make(chan struct{}, 32)
		for i := range n {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if _, err := e.c.Create(context.Background(), testkit.Secret(ns, fmt.Sprintf("dep-%05d", i), nil, testkit.OwnedBy(owner))); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		b.StartTimer()
		start := time.Now()
		e.del(owner, false)
		testkit.Eventually(b, 10*time.Minute, "the owner to be gone", func() bool {
			_, err := e.get("Secret", ns, "owner")
			return errors.Is(err, api.ErrNotFound)
		})
		b.ReportMetric(time.Since(start).Seconds(), "s/cascade")
		list, err := e.c.List(context.Background(), "Secret", ns, api.ListOptions{Limit: 1})
		if err != nil || len(list.Items) != 0 {
			b.Fatalf("left over: %v %v", list, err)
		}
	}
}

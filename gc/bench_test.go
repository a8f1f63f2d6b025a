package gc_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
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
		owner := e.secret("owner", nil)
		var wg sync.WaitGroup
		sem := make(chan struct{}, 32)
		for i := range n {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				if _, err := e.c.Create(context.Background(), newSecret(fmt.Sprintf("dep-%05d", i), nil, by(owner)...)); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		b.StartTimer()
		start := time.Now()
		e.del(owner, false)
		for {
			_, err := e.get("Secret", ns, "owner")
			if errors.Is(err, api.ErrNotFound) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/cascade")
		list, err := e.c.List(context.Background(), "Secret", ns, api.ListOptions{Limit: 1})
		if err != nil || len(list.Items) != 0 {
			b.Fatalf("left over: %v %v", list, err)
		}
	}
}

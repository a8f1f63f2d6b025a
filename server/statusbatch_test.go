package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"cairn.dev/cairn/api"
	cairnclient "cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

// TestServer_StatusWritesArrivingTogetherShareTransactions: status writes
// sent at once over HTTP are committed in fewer store transactions than
// writes, and each still gets its own answer: a write with a stale
// resourceVersion among them fails alone with Conflict.
func TestServer_StatusWritesArrivingTogetherShareTransactions(t *testing.T) {
	s := startWithWidgets(t, newWidgetHooks())
	c, err := cairnclient.NewHTTP(s.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n = 64
	cur := make([]*api.Object, n)
	for i := range cur {
		if cur[i], err = c.Create(ctx, testkit.Widget("default", fmt.Sprintf("w%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	stale := "1" // long gone: w0 was created later
	// On a loaded machine the writes of one round may arrive one after
	// the other; a few rounds give them the chance to meet.
	for round := range 5 {
		rev0 := revision(t, s)
		objs := make([]*api.Object, n)
		for i, o := range cur {
			objs[i] = o.DeepCopy()
			objs[i].SetField(api.FieldStatus, json.RawMessage(fmt.Sprintf(`{"phase":"r%d"}`, round)))
		}
		objs[0].ResourceVersion = stale
		out, errs := make([]*api.Object, n), make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range objs {
			wg.Go(func() {
				<-start
				out[i], errs[i] = c.UpdateStatus(ctx, objs[i])
			})
		}
		close(start)
		wg.Wait()
		if !errors.Is(errs[0], api.ErrConflict) {
			t.Fatalf("round %d: the write with a stale resourceVersion: %v, want Conflict", round, errs[0])
		}
		for i := 1; i < n; i++ {
			if errs[i] != nil {
				t.Fatalf("round %d: write %d: %v", round, i, errs[i])
			}
			if got := string(out[i].Field(api.FieldStatus)); got != fmt.Sprintf(`{"phase":"r%d"}`, round) {
				t.Fatalf("round %d: write %d answered status %s", round, i, got)
			}
			cur[i] = out[i]
		}
		if txns := revision(t, s) - rev0; txns < n-1 {
			t.Logf("round %d: %d writes in %d transactions", round, n-1, txns)
			return
		}
	}
	t.Fatalf("%d status writes sent at once, five times, never shared a transaction", n-1)
}

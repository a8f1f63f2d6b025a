package manager_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/server/servertest"
)

// TestManager_StatusWritesOfATermAreFencedAndCommittedTogether: the status
// writes a leader's controllers make at once through the term's client
// share store transactions, each with its own outcome.
func TestManager_StatusWritesOfATermAreFencedAndCommittedTogether(t *testing.T) {
	srv := servertest.Start(t)
	ctx := testkit.Context(t)
	c := local.New(srv.Registry, identity.System())
	const n = 100
	objs := testkit.CleanerStatusWrites(t, c, "term", n, `{"phase":"Waiting"}`)
	// One of them is stale: its write alone must fail.
	if _, err := c.UpdateStatus(ctx, objs[7].DeepCopy()); err != nil {
		t.Fatal(err)
	}
	results := make(chan []client.StatusResult, 1)
	writer := manager.Controller{Name: "writer", Setup: func(term *manager.Term) error {
		term.Add("writer", manager.RunnableFunc(func(ctx context.Context) error {
			res := make([]client.StatusResult, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { res[i].Object, res[i].Err = term.Client.UpdateStatus(ctx, objs[i]) })
			}
			wg.Wait()
			results <- res
			<-ctx.Done()
			return nil
		}))
		return nil
	}}
	m, err := manager.New(manager.Options{Client: c, Identity: "http://a", LeaderElection: true, Logger: quiet(),
		Controllers: []manager.Controller{writer}})
	if err != nil {
		t.Fatal(err)
	}
	startManager(t, m)
	var res []client.StatusResult
	select {
	case res = <-results:
	case <-ctx.Done():
		t.Fatal("the term's writes did not finish")
	}
	revisions := map[string]bool{}
	for i, r := range res {
		switch {
		case i == 7 && !errors.Is(r.Err, api.ErrConflict):
			t.Fatalf("the stale write: %v, want Conflict", r.Err)
		case i != 7 && r.Err != nil:
			t.Fatalf("write %d: %v", i, r.Err)
		case i != 7:
			revisions[r.Object.ResourceVersion] = true
		}
	}
	if len(revisions) >= n-1 {
		t.Fatalf("%d writes committed at %d revisions: none shared a transaction", n-1, len(revisions))
	}
	t.Logf("%d writes committed in %d transactions", n-1, len(revisions))
}

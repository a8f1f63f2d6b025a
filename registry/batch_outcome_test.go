package registry_test

import (
	"fmt"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
)

// TestUpdateStatuses_BatchWhoseAnswerWasLostIsAnsweredAsWritten: the
// batched status path commits through the single writes' path, so a
// transaction whose answer the store lost is settled (read back) and
// answered as the success it was, not as a Timeout or a Conflict.
func TestUpdateStatuses_BatchWhoseAnswerWasLostIsAnsweredAsWritten(t *testing.T) {
	r, _, f := newFaultyRegistry(t)
	ctx := deadlineCtx(5 * time.Second)
	var objs []*api.Object
	for i := range 5 {
		cl, err := r.Create(ctx, testkit.Cleaner("default", fmt.Sprintf("c%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, withStatus(cl, fmt.Sprintf(`{"phase":"Waiting","observedGeneration":%d}`, i+1)))
	}
	f.set(0, 1, false)
	for i, res := range r.UpdateStatuses(ctx, objs) {
		if res.Err != nil {
			t.Fatalf("write %d of a batch whose answer was lost: %v, want it written", i, res.Err)
		}
		statusIs(t, r, api.KindCleaner, "default", objs[i].Name, fmt.Sprintf(`{"observedGeneration":%d,"phase":"Waiting"}`, i+1))
	}
	if f.lost != 1 {
		t.Fatalf("%d answers lost, want 1", f.lost)
	}
}

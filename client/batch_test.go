package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
)

func TestUpdateStatuses_InProcessInOneTransactionOverHTTPOneByOneWithTheSameOutcomes(t *testing.T) {
	srv, overHTTP := start(t)
	inProcess := local.New(srv.Registry, identity.System())
	if _, ok := inProcess.(client.StatusBatcher); !ok {
		t.Fatal("the in-process client is not a StatusBatcher")
	}
	if _, ok := overHTTP.(client.StatusBatcher); ok {
		t.Fatal("the HTTP client claims to batch")
	}
	for _, tc := range []struct {
		name    string
		c       client.Interface
		batched bool
	}{{"in-process", inProcess, true}, {"http", overHTTP, false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testkit.Context(t)
			var objs []*api.Object
			for i := range 3 {
				o, err := tc.c.Create(ctx, testkit.Cleaner("default", fmt.Sprintf("%s-%d", tc.name, i)))
				if err != nil {
					t.Fatal(err)
				}
				o.SetField(api.FieldStatus, json.RawMessage(`{"phase":"Waiting"}`))
				objs = append(objs, o)
			}
			// The second is stale: someone else wrote its status first.
			if _, err := tc.c.UpdateStatus(ctx, objs[1]); err != nil {
				t.Fatal(err)
			}
			objs[1].SetField(api.FieldStatus, json.RawMessage(`{"phase":"Pending"}`))
			res := client.UpdateStatuses(ctx, tc.c, objs)
			if len(res) != 3 || res[0].Err != nil || res[2].Err != nil || !errors.Is(res[1].Err, api.ErrConflict) {
				t.Fatalf("results %+v: want the first and last written, the second a Conflict", res)
			}
			for _, i := range []int{0, 2} {
				got, err := tc.c.Get(ctx, api.KindCleaner, "default", objs[i].Name)
				if err != nil || string(got.Field(api.FieldStatus)) != `{"phase":"Waiting"}` || got.ResourceVersion != res[i].Object.ResourceVersion {
					t.Fatalf("%s: %s at %s (%v), want the status written at %s", objs[i].Name, got.Field(api.FieldStatus), got.ResourceVersion, err, res[i].Object.ResourceVersion)
				}
			}
			if same := res[0].Object.ResourceVersion == res[2].Object.ResourceVersion; same != tc.batched {
				t.Errorf("written at %s and %s: one transaction %v, want %v", res[0].Object.ResourceVersion, res[2].Object.ResourceVersion, same, tc.batched)
			}
		})
	}
}

func TestUpdateStatuses_FencedClientBatchesAndIsRefusedOutOfItsTerm(t *testing.T) {
	srv, _ := start(t)
	ctx := testkit.Context(t)
	inProcess := local.New(srv.Registry, identity.System())
	lease := controllersLease(t, inProcess)
	var lost []error
	fenced := client.Fenced(inProcess, api.Fence{Lease: "controllers", UID: lease.UID, Holder: "a", Term: 1},
		func(err error) { lost = append(lost, err) })
	if _, ok := fenced.(client.StatusBatcher); !ok {
		t.Fatal("a fenced in-process client does not batch")
	}
	var objs []*api.Object
	for i := range 2 {
		o, err := inProcess.Create(ctx, testkit.Cleaner("default", fmt.Sprintf("fenced-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		o.SetField(api.FieldStatus, json.RawMessage(`{"phase":"Waiting"}`))
		objs = append(objs, o)
	}
	for i, r := range client.UpdateStatuses(ctx, fenced, objs) {
		if r.Err != nil {
			t.Fatalf("in the term, write %d: %v", i, r.Err)
		}
		objs[i] = r.Object
	}
	// Another holder takes the lease: every write of the batch is refused
	// and the fence reports it lost, once.
	lease.SetField(api.FieldSpec, json.RawMessage(`{"holderIdentity":"b","leaseDurationSeconds":5,"leaseTransitions":2}`))
	if _, err := inProcess.Update(ctx, lease); err != nil {
		t.Fatal(err)
	}
	for i, r := range client.UpdateStatuses(ctx, fenced, objs) {
		if !api.IsNotLeader(r.Err) {
			t.Fatalf("out of the term, write %d: %v, want NotLeader", i, r.Err)
		}
	}
	if len(lost) != 1 {
		t.Fatalf("lost reported %d times, want once", len(lost))
	}
}

// A fenced HTTP client (a controller-manager's) is no StatusBatcher, so
// GroupStatuses leaves it alone: its status writes go out concurrently, one
// request each, fenced, instead of through a group's few flushers.
func TestGroupStatuses_AFencedHTTPClientIsLeftUngrouped(t *testing.T) {
	srv, overHTTP := start(t)
	ctx := testkit.Context(t)
	inProcess := local.New(srv.Registry, identity.System())
	lease := controllersLease(t, inProcess)
	fence := api.Fence{Lease: "controllers", UID: lease.UID, Holder: "a", Term: 1}
	fenced := client.Fenced(overHTTP, fence, nil)
	if _, ok := fenced.(client.StatusBatcher); ok {
		t.Fatal("a fenced HTTP client claims to batch")
	}
	grouped, group := client.GroupStatuses(fenced)
	if group != nil || grouped != fenced {
		t.Fatal("GroupStatuses grouped a fenced HTTP client")
	}
	o, err := inProcess.Create(ctx, testkit.Cleaner("default", "over-http"))
	if err != nil {
		t.Fatal(err)
	}
	o.SetField(api.FieldStatus, json.RawMessage(`{"phase":"Waiting"}`))
	if _, err := grouped.UpdateStatus(ctx, o); err != nil {
		t.Fatalf("a fenced status write over HTTP in the term: %v", err)
	}
	// Still fenced: out of the term the write is refused.
	lease.SetField(api.FieldSpec, json.RawMessage(`{"holderIdentity":"b","leaseDurationSeconds":5,"leaseTransitions":2}`))
	if _, err := inProcess.Update(ctx, lease); err != nil {
		t.Fatal(err)
	}
	cur, err := inProcess.Get(ctx, api.KindCleaner, "default", "over-http")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := grouped.UpdateStatus(ctx, cur); !api.IsNotLeader(err) {
		t.Fatalf("out of the term: %v, want NotLeader", err)
	}
}

func TestGroupStatuses_ConcurrentWritesShareTransactionsEachWithItsOwnOutcome(t *testing.T) {
	srv, overHTTP := start(t)
	if c, g := client.GroupStatuses(overHTTP); g != nil || c != overHTTP {
		t.Fatal("the HTTP client was grouped: it cannot batch")
	}
	ctx := testkit.Context(t)
	inProcess := local.New(srv.Registry, identity.System())
	grouped, g := client.GroupStatuses(inProcess)
	if g == nil {
		t.Fatal("the in-process client was not grouped")
	}
	if _, ok := grouped.(client.StatusBatcher); !ok {
		t.Fatal("the grouped client is no StatusBatcher")
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { g.Run(runCtx); close(ran) }()
	defer func() { stop(); <-ran }()

	const n = 200
	objs := testkit.CleanerStatusWrites(t, inProcess, "group", n, `{"phase":"Waiting"}`)
	// Every tenth is stale: someone else wrote its status first.
	for i := 0; i < n; i += 10 {
		if _, err := inProcess.UpdateStatus(ctx, objs[i].DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	res := make([]client.StatusResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			o := objs[i].DeepCopy()
			o.SetField(api.FieldStatus, json.RawMessage(`{"phase":"Pending"}`))
			res[i].Object, res[i].Err = grouped.UpdateStatus(ctx, o)
		})
	}
	wg.Wait()
	revisions := map[string]int{}
	for i, r := range res {
		stale := i%10 == 0
		switch {
		case stale && !errors.Is(r.Err, api.ErrConflict):
			t.Fatalf("stale write %d: %v, want Conflict", i, r.Err)
		case !stale && r.Err != nil:
			t.Fatalf("write %d: %v", i, r.Err)
		case !stale:
			revisions[r.Object.ResourceVersion]++
			got, err := inProcess.Get(ctx, api.KindCleaner, "default", objs[i].Name)
			if err != nil || string(got.Field(api.FieldStatus)) != `{"phase":"Pending"}` {
				t.Fatalf("%s: status %s (%v), want the one written", objs[i].Name, got.Field(api.FieldStatus), err)
			}
		}
	}
	if len(revisions) >= n-n/10 {
		t.Fatalf("%d writes committed at %d revisions: none shared a transaction", n-n/10, len(revisions))
	}
	t.Logf("%d writes committed in %d transactions", n-n/10, len(revisions))
}

func TestGroupStatuses_WriteAfterTheGroupStoppedEndsWithItsContext(t *testing.T) {
	srv, _ := start(t)
	grouped, g := client.GroupStatuses(local.New(srv.Registry, identity.System()))
	runCtx, stop := context.WithCancel(testkit.Context(t))
	stop()
	g.Run(runCtx) // returns at once
	ctx, cancel := context.WithTimeout(testkit.Context(t), 50*time.Millisecond)
	defer cancel()
	o := testkit.Object(api.KindCleaner, "default", "nobody-writes")
	if _, err := grouped.UpdateStatus(ctx, o); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write without a running group: %v, want the context's deadline", err)
	}
}

// controllersLease creates the Lease "controllers", held by "a" in its
// first term.
func controllersLease(t *testing.T, c client.Interface) *api.Object {
	t.Helper()
	lease, err := c.Create(testkit.Context(t), testkit.Object(api.KindLease, "", "controllers",
		testkit.Spec(`{"holderIdentity":"a","leaseDurationSeconds":5,"leaseTransitions":1}`)))
	if err != nil {
		t.Fatal(err)
	}
	return lease
}

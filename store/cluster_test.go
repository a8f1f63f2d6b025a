package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/storetest"
)

// testTimeout is the store timeout of these tests.
const testTimeout = 2 * time.Second

// TestCluster_ReadsSurviveTheLossOfTheLeader kills the etcd leader and
// reads at once: reads under a store timeout are retried on the surviving
// members, and succeed.
func TestCluster_ReadsSurviveTheLossOfTheLeader(t *testing.T) {
	c := storetest.StartCluster(t)
	s := c.Dial(t)
	ctx := store.WithTimeout(context.Background(), 5*time.Second)
	if _, err := s.Txn(ctx, nil, store.Put("/k", []byte("v"))); err != nil {
		t.Fatal(err)
	}
	c.Kill(c.WaitLeader(t))
	for i := range 20 {
		kv, err := s.Get(ctx, "/k")
		if err != nil || string(kv.Value) != "v" {
			t.Fatalf("read %d after the leader died: %+v %v", i, kv, err)
		}
	}
}

// TestCluster_WithoutQuorumCallsFailUnavailableWithinTheTimeout kills two
// members of three: reads and writes under a store timeout fail with
// ErrUnavailable (a write known not applied) or ErrTimeout (a write whose
// outcome is unknown) within the timeout, never later; once the members
// are back, they succeed again. A serializable read may instead be served
// by the surviving member, which is what it is for; it must still answer
// within the bound.
func TestCluster_WithoutQuorumCallsFailUnavailableWithinTheTimeout(t *testing.T) {
	c := storetest.StartCluster(t)
	s := c.Dial(t)
	ctx := store.WithTimeout(context.Background(), testTimeout)
	if _, err := s.Txn(ctx, nil, store.Put("/k", []byte("v"))); err != nil {
		t.Fatal(err)
	}
	lead := c.WaitLeader(t)
	c.Kill(lead)
	c.Kill((lead + 1) % storetest.ClusterSize)
	bound := 3 * testTimeout // generous: a loaded machine
	calls := map[string]func() error{
		"get":      func() error { _, err := s.Get(ctx, "/k"); return err },
		"getStale": func() error { _, err := s.GetStale(ctx, "/k"); return err },
		"list":     func() error { _, err := s.List(ctx, "/", store.ListOptions{}); return err },
		"revision": func() error { _, err := s.Revision(ctx); return err },
		"txn": func() error {
			_, err := s.Txn(ctx, []store.Cond{store.Absent("/new")}, store.Put("/new", nil))
			return err
		},
	}
	for round := range 1 {
		for name, call := range calls {
			start := time.Now()
			err := call()
			took := time.Since(start)
			t.Logf("round %d %s: %s %v", round, name, took, err)
			switch {
			case took > bound:
				t.Errorf("round %d: %s took %s, more than %s", round, name, took, bound)
			case name == "txn" && (errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrTimeout)):
			case name == "getStale" && err == nil:
			case errors.Is(err, store.ErrUnavailable):
			default:
				t.Errorf("round %d: %s: got %v, want ErrUnavailable", round, name, err)
			}
		}
	}
	c.Restart(t, lead)
	c.Restart(t, (lead+1)%storetest.ClusterSize)
	c.WaitReady(t)
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := s.Txn(ctx, nil, store.Put("/after", nil))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write a minute after the members came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if kv, err := s.Get(ctx, "/k"); err != nil || string(kv.Value) != "v" {
		t.Fatalf("read after the restore: %+v %v", kv, err)
	}
}

// TestCluster_KilledLeaderLosesNoAcknowledgedWrite writes while the leader
// is killed and restarted: every write acknowledged is there afterwards.
func TestCluster_KilledLeaderLosesNoAcknowledgedWrite(t *testing.T) {
	c := storetest.StartCluster(t)
	s := c.Dial(t)
	ctx := store.WithTimeout(context.Background(), 5*time.Second)
	var acked []string
	lead := -1
	for i := range 200 {
		if i == 50 {
			lead = c.WaitLeader(t)
			c.Kill(lead)
		}
		if i == 150 {
			c.Restart(t, lead)
		}
		key := fmt.Sprintf("/w/%03d", i)
		if _, err := s.Txn(ctx, []store.Cond{store.Absent(key)}, store.Put(key, []byte(key))); err == nil {
			acked = append(acked, key)
		}
	}
	c.WaitReady(t)
	for _, key := range acked {
		if _, err := s.Get(ctx, key); err != nil {
			t.Errorf("acknowledged %s: %v", key, err)
		}
	}
	if len(acked) < 150 {
		t.Errorf("only %d of 200 writes acknowledged", len(acked))
	}
}

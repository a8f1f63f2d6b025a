package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/embedded"
	"cairn.dev/cairn/store/storetest"
)

// testQuota is the smallest quota the store accepts: a few dozen writes of
// a MiB fill it.
const testQuota = store.MinQuota

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fillDirectly writes 1 MiB values under prefix, bypassing Fits, until
// etcd refuses one for lack of space, and returns the keys written and
// that refusal.
func fillDirectly(t *testing.T, s *store.Store, prefix string) ([]string, error) {
	t.Helper()
	value := []byte(strings.Repeat("x", 1<<20))
	var keys []string
	for i := 0; i < 4*testQuota>>20; i++ {
		key := fmt.Sprintf("%s%03d", prefix, i)
		if _, err := s.Txn(context.Background(), nil, store.Put(key, value)); err != nil {
			return keys, err
		}
		keys = append(keys, key)
	}
	t.Fatalf("wrote %d MiB into a store with a quota of %s: no refusal", len(keys), store.FormatBytes(testQuota))
	return nil, nil
}

func TestSpaceMonitor_FullStoreRefusesPutsAcceptsDeletesAndRecovers(t *testing.T) {
	s, _ := storetest.StartWith(t, embedded.Options{Quota: testQuota})
	m := s.MonitorSpace(store.SpaceOptions{Logger: quiet, KeepHistory: -1})
	ctx := context.Background()
	sp, err := m.Check(ctx)
	if err != nil || sp.Quota != testQuota || sp.Full || sp.Limit != testQuota-testQuota*store.HeadroomPercent/100 {
		t.Fatalf("fresh store: %+v, %v; want quota %d, not full", sp, err, testQuota)
	}

	keys, err := fillDirectly(t, s, "/fill/")
	var se *store.SpaceError
	if !errors.Is(err, store.ErrNoSpace) || !errors.As(err, &se) {
		t.Fatalf("write to a full store: %v, want a *SpaceError", err)
	}
	if sp, err = m.Check(ctx); err != nil || !sp.Alarm || !sp.Full {
		t.Fatalf("after etcd refused a write: %+v, %v; want the alarm raised and full", sp, err)
	}
	if !strings.Contains(sp.String(), store.FormatBytes(testQuota)+" quota") {
		t.Errorf("space %q does not name the quota %s", sp, store.FormatBytes(testQuota))
	}
	if _, err := s.Txn(ctx, nil, store.Put("/small", []byte("x"))); !errors.Is(err, store.ErrNoSpace) {
		t.Fatalf("a small put under the alarm: %v, want ErrNoSpace", err)
	}
	if err := s.Fits(true, store.Put("/small", []byte("x"))); !errors.Is(err, store.ErrNoSpace) {
		t.Errorf("Fits for a write that adds data to a full store: %v, want ErrNoSpace", err)
	}

	// Pure deletions pass the alarm; the monitor frees the space.
	for _, k := range keys[:len(keys)-4] {
		if _, err := s.Txn(ctx, nil, store.Del(k)); err != nil {
			t.Fatalf("delete %s on a full store: %v", k, err)
		}
	}
	if err := m.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	sp = s.Space()
	if sp.Full || sp.Alarm || sp.Recoveries != 1 || sp.Size >= sp.Limit {
		t.Fatalf("after deletions and a recovery: %+v; want not full, alarm disarmed, one recovery", sp)
	}
	if _, err := s.Txn(ctx, nil, store.Put("/small", []byte("x"))); err != nil {
		t.Fatalf("a put after the recovery: %v", err)
	}
}

func TestFits_RefusesGrowthPastTheSoftLimitAndMarksPastTheQuota(t *testing.T) {
	s, _ := storetest.StartWith(t, embedded.Options{Quota: testQuota})
	m := s.MonitorSpace(store.SpaceOptions{Logger: quiet, KeepHistory: -1})
	ctx := context.Background()
	sp, err := m.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	room := sp.Limit - sp.Size
	put := func(n int64) store.Op { return store.Put("/k", make([]byte, n)) }
	for _, c := range []struct {
		name string
		grow bool
		op   store.Op
		fits bool
	}{
		{"growth well under the soft limit", true, put(room / 2), true},
		{"growth past the soft limit", true, put(room), false},
		{"a mark past the soft limit, under the quota", false, put(room + (sp.Quota-sp.Limit)/2), true},
		{"a mark past the quota", false, put(sp.Quota - sp.Size), false},
		{"a deletion", true, store.Del("/k"), true},
	} {
		err := s.Fits(c.grow, c.op)
		if (err == nil) != c.fits {
			t.Errorf("%s: Fits = %v, want fits %v", c.name, err, c.fits)
		}
		var se *store.SpaceError
		if err != nil && (!errors.As(err, &se) || se.Need == 0 || se.Space.Quota != testQuota) {
			t.Errorf("%s: %v is not a *SpaceError with the need and the quota", c.name, err)
		}
	}
	// What is written counts before the next check.
	for i := int64(0); i < room/2>>20; i++ {
		if _, err := s.Txn(ctx, nil, store.Put(fmt.Sprintf("/w%d", i), make([]byte, 1<<20))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Fits(true, store.Put("/j", make([]byte, room*3/4))); !errors.Is(err, store.ErrNoSpace) {
		t.Errorf("growth that fit before a write of half the room: %v, want ErrNoSpace", err)
	}
}

func TestTxn_LargerThanEtcdAcceptsIsRefusedUnsent(t *testing.T) {
	s, _ := storetest.Start(t)
	ctx := context.Background()
	half := make([]byte, store.MaxTxnBytes/2)
	_, err := s.Txn(ctx, nil, store.Put("/a", half), store.Put("/b", half))
	var se *store.SizeError
	if !errors.Is(err, store.ErrTooLarge) || !errors.As(err, &se) || se.Limit != store.MaxTxnBytes || se.Size <= se.Limit {
		t.Fatalf("txn of %d bytes: %v, want a *SizeError naming the limit %d", 2*len(half), err, store.MaxTxnBytes)
	}
	if _, err := s.Get(ctx, "/a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after a refused txn: %v, want nothing written", err)
	}
	// The largest transaction the store sends is one etcd accepts.
	value := make([]byte, store.MaxTxnBytes)
	value = value[:len(value)-(store.TxnBytes(nil, []store.Op{store.Put("/big", value)})-store.MaxTxnBytes)]
	if n := store.TxnBytes(nil, []store.Op{store.Put("/big", value)}); n != store.MaxTxnBytes {
		t.Fatalf("built a txn of %d bytes, want %d", n, store.MaxTxnBytes)
	}
	if _, err := s.Txn(ctx, nil, store.Put("/big", value)); err != nil {
		t.Fatalf("a txn of MaxTxnBytes: %v", err)
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{900: "900", 1536 << 10: "1.5Mi", 2 << 30: "2Gi", 64 << 20: "64Mi", 1<<20 + 1: "1Mi"} {
		if got := store.FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

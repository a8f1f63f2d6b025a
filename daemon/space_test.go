package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/store"
)

// smallQuota is small enough to fill in seconds, and large enough that
// the database's growth between defragmentations (a few times the largest
// value) is small beside its headroom.
const smallQuota = 32 << 20

// fullOptions are a server with a small quota, checked often, running the
// garbage collector.
func fullOptions(dir string) daemon.Options {
	return daemon.Options{DataDir: dir, StoreQuota: smallQuota, SpaceCheckInterval: 100 * time.Millisecond,
		Controllers: controllers.List(controllers.Config{})}
}

// bigSecret is a Secret holding n bytes.
func bigSecret(ns, name string, n int, opts ...testkit.Opt) *api.Object {
	return testkit.Secret(ns, name, map[string]string{"blob": strings.Repeat("b", n)}, opts...)
}

// secretBytes is the size of the Secrets that fill the store: small
// enough to be quick under the race detector.
const secretBytes = 64 << 10

// putJunk writes count values of n bytes under key0, key1, ... directly in
// etcd, bypassing cairn, in one transaction.
func putJunk(d *daemon.Daemon, key string, count, n int) error {
	ops := make([]clientv3.Op, count)
	for i := range ops {
		ops[i] = clientv3.OpPut(fmt.Sprintf("%s%d", key, i), strings.Repeat("j", n))
	}
	_, err := d.Store().Client().Txn(context.Background()).Then(ops...).Commit()
	return err
}

// inUse is the bytes etcd's database holds, once the writes of the last
// moment are committed: etcd commits every 100ms, and at once before it
// hashes its database (Maintenance.Hash), whose answer is the proof.
func inUse(t *testing.T, d *daemon.Daemon) int64 {
	t.Helper()
	cli := d.Store().Client()
	if _, err := pb.NewMaintenanceClient(cli.ActiveConnection()).Hash(context.Background(), &pb.HashRequest{}); err != nil {
		t.Fatalf("hash etcd's database (which commits it): %v", err)
	}
	st, err := cli.Status(context.Background(), cli.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	return st.DbSizeInUse
}

// fillFull fills the store until it is full for good, and returns the
// Secrets it created through the API and the last refusal. It fills the
// store directly in etcd, which is quicker, to 1.5 MiB under the point
// where the space monitor would defragment it (small values, so that the
// database grows with its data); then creates Secrets through the API until
// the server refuses one and its space monitor can free nothing more.
// Deleting those Secrets frees enough for the monitor to recover the store.
func fillFull(t *testing.T, d *daemon.Daemon, c client.Interface) ([]string, error) {
	t.Helper()
	ctx := context.Background()
	sp := d.Store().Space()
	defrag := sp.Limit - sp.Reserve - (sp.Quota-sp.Limit)/2 // see SpaceMonitor.Recover
	for i := 0; ; i++ {
		left := defrag - 3<<19 - inUse(t, d)
		if left <= 0 {
			break
		}
		// Far from the mark, large values; close to it, small ones; about
		// half of what is left between two looks.
		if left > 4<<20 {
			for j := range max(1, (left-4<<20)/(6<<20)) {
				if err := putJunk(d, fmt.Sprintf("/junk/big%d-%d/", i, j), 12, 256<<10); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		for j := range max(1, left/(1<<20)) {
			if err := putJunk(d, fmt.Sprintf("/junk/small%d-%d/", i, j), int(min(128, 1+left/(4<<10))), 3<<10); err != nil {
				t.Fatal(err)
			}
		}
	}
	var names []string
	for range 4 * (3 << 19) / secretBytes {
		name := fmt.Sprintf("big%d", len(names))
		_, err := c.Create(ctx, bigSecret("default", name, secretBytes))
		if err == nil {
			names = append(names, name)
			continue
		}
		if !errors.Is(err, api.ErrInsufficientStorage) {
			t.Fatal(err)
		}
		if err := d.Space().Recover(ctx); err != nil {
			t.Fatal(err)
		}
		if d.Store().Space().Full {
			return names, err
		}
	}
	t.Fatalf("created %d Secrets through the API: the store never filled (%s)", len(names), d.Store().Space())
	return nil, nil
}

// assertInsufficientStorage checks that err is a 507 naming the quota.
func assertInsufficientStorage(t *testing.T, err error, what string) {
	t.Helper()
	var st *api.Status
	if !errors.As(err, &st) || st.Code != http.StatusInsufficientStorage || st.Reason != api.ReasonInsufficientStorage {
		t.Fatalf("%s: %v, want 507 InsufficientStorage", what, err)
	}
	if !strings.Contains(st.Message, store.FormatBytes(smallQuota)+" quota") || !strings.Contains(st.Message, "--store-quota") {
		t.Fatalf("%s: message %q does not name the %s quota and its flag", what, st.Message, store.FormatBytes(smallQuota))
	}
}

// get fetches path from d with the admin token and returns the status code
// and body.
func get(t *testing.T, d *daemon.Daemon, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, d.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.Token())
	resp, err := testkit.HTTPClient(t, d.ClientConfig()).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric returns the value of the unlabelled metric name on /metrics.
func metric(t *testing.T, d *daemon.Daemon, name string) float64 {
	t.Helper()
	code, body := get(t, d, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	for _, line := range strings.Split(body, "\n") {
		var v float64
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			if _, err := fmt.Sscan(rest, &v); err == nil {
				return v
			}
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
}

// assertReportsFull checks /readyz (503 naming the full store and its
// quota), /healthz (200) and the metrics of a full store.
func assertReportsFull(t *testing.T, d *daemon.Daemon) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, "/readyz to say the store is full", func() bool {
		code, body := get(t, d, "/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "the store is full") &&
			strings.Contains(body, store.FormatBytes(smallQuota)+" quota")
	})
	if code, body := get(t, d, "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz on a full store: %d %s", code, body)
	}
	if got := metric(t, d, "cairn_store_full"); got != 1 {
		t.Errorf("cairn_store_full = %v, want 1", got)
	}
	if got := metric(t, d, "cairn_store_quota_bytes"); got != smallQuota {
		t.Errorf("cairn_store_quota_bytes = %v, want %d", got, smallQuota)
	}
	if size, inUse := metric(t, d, "cairn_store_size_bytes"), metric(t, d, "cairn_store_size_in_use_bytes"); size <= 0 || inUse <= 0 || inUse > size {
		t.Errorf("cairn_store_size_bytes %v, cairn_store_size_in_use_bytes %v: want 0 < in use <= size", size, inUse)
	}
}

// assertRecovers waits for d to accept a create again by itself, and checks
// that /readyz and the metrics say so (recoveries were before).
func assertRecovers(t *testing.T, d *daemon.Daemon, c client.Interface, name string, recoveries float64) {
	t.Helper()
	testkit.EventuallyNil(t, 30*time.Second, "a create after the store recovered", func() error {
		_, err := c.Create(context.Background(), testkit.Secret("default", name, password()))
		return err
	})
	if code, body := get(t, d, "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz after the recovery: %d %s", code, body)
	}
	if got := metric(t, d, "cairn_store_full"); got != 0 {
		t.Errorf("cairn_store_full after the recovery = %v, want 0", got)
	}
	if got := metric(t, d, "cairn_store_recoveries_total"); got <= recoveries {
		t.Errorf("cairn_store_recoveries_total = %v, want more than the %v before", got, recoveries)
	}
	alarms, err := d.Store().Client().AlarmList(context.Background())
	if err != nil || len(alarms.Alarms) != 0 {
		t.Fatalf("alarms after the recovery: %v (err %v), want none", alarms.Alarms, err)
	}
}

func TestDaemon_FullStoreRefusesCreatesKeepsReadsAndDeletesAndRecoversByItself(t *testing.T) {
	d := start(t, fullOptions(dataDir(t)))
	c := httpClient(t, d)
	ctx := context.Background()

	names, err := fillFull(t, d, c)
	assertInsufficientStorage(t, err, "a create on a full store")
	if alarms, err := d.Store().Client().AlarmList(ctx); err != nil || len(alarms.Alarms) != 0 {
		t.Fatalf("alarms %v (err %v): cairn should refuse writes before etcd's alarm fires", alarms.Alarms, err)
	}
	// A small create is refused too: the store is full, not only short of
	// room for a large write. (The background recovery may compact away
	// a little history, e.g. of lease renewals, so a few small creates may
	// still fit right at the edge; never many.)
	for i := 0; ; i++ {
		name := fmt.Sprintf("small%d", i)
		_, err = c.Create(ctx, testkit.Secret("default", name, password()))
		if err != nil {
			assertInsufficientStorage(t, err, "a small create on a full store")
			break
		}
		names = append(names, name)
		if i == 20 {
			t.Fatalf("20 small creates succeeded on a full store (%s)", d.Store().Space())
		}
	}
	assertReportsFull(t, d)

	// Reads and lists work.
	if _, err := c.Get(ctx, "Secret", "default", names[0]); err != nil {
		t.Fatalf("get on a full store: %v", err)
	}
	l, err := c.List(ctx, "Secret", "default", api.ListOptions{})
	if err != nil {
		t.Fatalf("list on a full store: %v", err)
	}
	if len(l.Items) != len(names) {
		t.Fatalf("list on a full store: %d items, want %d", len(l.Items), len(names))
	}

	// Deletes work (deletion marks fit under the quota and the collector
	// finishes them; where a mark does not fit, the object goes at once),
	// and the store recovers by itself.
	recoveries := metric(t, d, "cairn_store_recoveries_total")
	for i, name := range names {
		obj, gone, err := c.Delete(ctx, "Secret", "default", name, api.DeleteOptions{})
		if err != nil {
			t.Fatalf("delete %s on a full store: %v", name, err)
		}
		// A deletion mark while it fits; right at the quota's edge, a
		// direct removal (the Secret has no finalizers).
		if !gone && !obj.Deleting() {
			t.Fatalf("delete %d on a full store: neither gone nor marked", i)
		}
	}
	assertRecovers(t, d, c, "after", recoveries)
}

// raiseAlarm writes to etcd directly, bypassing cairn, until etcd raises
// its NOSPACE alarm and the space monitor cannot disarm it: the data
// fills the store (etcd may raise it earlier, when its database grows
// faster than its data; the monitor then defragments and disarms).
func raiseAlarm(t *testing.T, d *daemon.Daemon) {
	t.Helper()
	ctx := context.Background()
	for i := range 4 * smallQuota / (128 << 10) {
		err := putJunk(d, fmt.Sprintf("/junk/alarm%d", i), 1, 128<<10)
		if err == nil {
			continue
		}
		if !errors.Is(err, rpctypes.ErrNoSpace) {
			t.Fatalf("raise the alarm: %v", err)
		}
		if err := d.Space().Recover(ctx); err != nil {
			t.Fatal(err)
		}
		alarms, err := d.Store().Client().AlarmList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(alarms.Alarms) > 0 && alarms.Alarms[0].Alarm == pb.AlarmType_NOSPACE {
			return
		}
	}
	t.Fatal("etcd accepted four times its quota")
}

func TestDaemon_EtcdAlarm_DeletesWorkAndTheServerRestartsAndRecovers(t *testing.T) {
	dir := dataDir(t)
	d := start(t, fullOptions(dir))
	c := httpClient(t, d)
	ctx := context.Background()
	parent, err := c.Create(ctx, testkit.Secret("default", "parent", password()))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Registry().EnsureNamespace(identity.With(ctx, identity.System()), "tenant"); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []*api.Object{
		testkit.Secret("default", "tiny0", password()),
		testkit.Secret("default", "tiny1", password()),
		testkit.Secret("default", "held", password(), testkit.Finalizers("example.com/hold")),
		testkit.Secret("default", "child0", password(), testkit.OwnedBy(parent)),
		testkit.Secret("default", "child1", password(), testkit.OwnedBy(parent)),
		testkit.Secret("tenant", "resident", password()),
	} {
		if _, err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	names, err := fillFull(t, d, c)
	assertInsufficientStorage(t, err, "a create on a full store")
	raiseAlarm(t, d)

	_, err = c.Create(ctx, testkit.Secret("default", "small", password()))
	assertInsufficientStorage(t, err, "a create under etcd's alarm")
	assertReportsFull(t, d)

	// A watch sees the deletion, which removes the object at once: its
	// deletion mark would not fit.
	w, err := c.Watch(ctx, "Secret", "default", api.ListOptions{})
	if err != nil {
		t.Fatalf("watch under etcd's alarm: %v", err)
	}
	defer w.Stop()
	if _, gone, err := c.Delete(ctx, "Secret", "default", "tiny0", api.DeleteOptions{}); err != nil || !gone {
		t.Fatalf("delete under etcd's alarm: gone %v, err %v; want removed at once", gone, err)
	}
	testkit.Eventually(t, 10*time.Second, "the watch to see the deletion", func() bool {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("the watch ended on a full store: %v", w.Err())
			}
			return ev.Type == api.Deleted && ev.Object.Name == "tiny0"
		default:
			return false
		}
	})
	// An owner and a namespace go at once too; their dependents and
	// members are left to the garbage collector.
	for _, del := range [][3]string{{"Secret", "default", "parent"}, {"Namespace", "", "tenant"}} {
		if _, gone, err := c.Delete(ctx, del[0], del[1], del[2], api.DeleteOptions{}); err != nil || !gone {
			t.Fatalf("delete %s %s under etcd's alarm: gone %v, err %v", del[0], del[2], gone, err)
		}
	}
	// An object with finalizers cannot be marked: 507 naming them; an
	// admin's forced deletion removes it.
	_, _, err = c.Delete(ctx, "Secret", "default", "held", api.DeleteOptions{})
	assertInsufficientStorage(t, err, "delete of an object with finalizers under etcd's alarm")
	if !strings.Contains(err.Error(), "example.com/hold") || !strings.Contains(err.Error(), "force") {
		t.Fatalf("refused deletion %q does not name the finalizer and the way out", err)
	}
	if _, gone, err := c.Delete(ctx, "Secret", "default", "held", api.DeleteOptions{Force: true}); err != nil || !gone {
		t.Fatalf("forced delete under etcd's alarm: gone %v, err %v", gone, err)
	}

	// The server stops and starts on the full data dir.
	token := d.Token()
	if err := d.Stop(); err != nil {
		t.Fatalf("stop on a full store: %v", err)
	}
	d2 := start(t, fullOptions(dir))
	if d2.Token() != token {
		t.Fatal("the admin token changed across a restart on a full store")
	}
	c2 := httpClient(t, d2)
	if alarms, err := d2.Store().Client().AlarmList(ctx); err != nil || len(alarms.Alarms) == 0 {
		t.Fatalf("after the restart: alarms %v (err %v); the test needs the alarm still raised", alarms, err)
	}
	assertReportsFull(t, d2)
	if s, err := c2.Get(ctx, "Secret", "default", "tiny1"); err != nil || s.Name != "tiny1" {
		t.Fatalf("read after a restart on a full store: %v", err)
	}
	l, err := c2.List(ctx, "Secret", "default", api.ListOptions{})
	if err != nil {
		t.Fatalf("list after a restart on a full store: %v", err)
	}
	listed := map[string]bool{}
	for _, item := range l.Items {
		listed[item.Name] = true
	}
	for _, name := range append([]string{"tiny1"}, names...) {
		if !listed[name] {
			t.Fatalf("list after a restart on a full store misses %s", name)
		}
	}
	if _, gone, err := c2.Delete(ctx, "Secret", "default", names[0], api.DeleteOptions{}); err != nil || !gone {
		t.Fatalf("delete after a restart on a full store: gone %v, err %v; want removed at once", gone, err)
	}

	// Free the space: what was written around cairn, directly, and the
	// objects through the API. The store recovers by itself, and the
	// collector, which could not hold its lease on a full store, collects
	// the dependents of the owner and the members of the namespace.
	recoveries := metric(t, d2, "cairn_store_recoveries_total")
	if _, err := d2.Store().Client().Delete(ctx, "/junk/", clientv3.WithPrefix()); err != nil {
		t.Fatalf("delete the data written around cairn: %v", err)
	}
	for _, name := range names[1:] {
		if _, _, err := c2.Delete(ctx, "Secret", "default", name, api.DeleteOptions{}); err != nil {
			t.Fatalf("delete %s after a restart on a full store: %v", name, err)
		}
	}
	assertRecovers(t, d2, c2, "after", recoveries)
	for _, orphan := range [][2]string{{"default", "child0"}, {"default", "child1"}, {"tenant", "resident"}} {
		testkit.Eventually(t, 30*time.Second, "the collector to collect "+orphan[1], func() bool {
			_, err := c2.Get(ctx, "Secret", orphan[0], orphan[1])
			return errors.Is(err, api.ErrNotFound)
		})
	}
}

func TestDaemon_ObjectOverMaxObjectBytesIsRefusedNamingTheLimit(t *testing.T) {
	d := start(t, daemon.Options{DataDir: dataDir(t), MaxObjectBytes: 64 << 10})
	c := httpClient(t, d)
	_, err := c.Create(context.Background(), bigSecret("default", "large", 100<<10))
	var st *api.Status
	if !errors.As(err, &st) || st.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("create over the object limit: %v, want 413", err)
	}
	if !strings.Contains(st.Message, "65536 bytes (64Ki)") {
		t.Fatalf("message %q does not name the limit of 65536 bytes", st.Message)
	}
	if _, err := c.Create(context.Background(), bigSecret("default", "fits", 32<<10)); err != nil {
		t.Fatalf("create under the object limit: %v", err)
	}
}

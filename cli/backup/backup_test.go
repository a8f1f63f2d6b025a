package backup_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
)

// ack is one write a client saw acknowledged.
type ack struct {
	name string
	rv   int64
}

// TestBackup_UnderLoadThenRestoreBringsBackEveryAcknowledgedWrite takes a
// backup while 16 clients write, restores it into a new data dir and
// starts a server on it: every write acknowledged before the backup was
// asked for is back, with its resourceVersion; so is every write at or
// below the backup's revision, and nothing above it; Secrets decrypt;
// the old admin token works.
func TestBackup_UnderLoadThenRestoreBringsBackEveryAcknowledgedWrite(t *testing.T) {
	ctx := testkit.Context(t)
	dir1 := filepath.Join(t.TempDir(), "data")
	d1, c1 := clitest.StartDaemon(t, daemon.Options{DataDir: dir1})
	if _, err := c1.Create(ctx, testkit.Secret(api.DefaultNamespace, "db", map[string]string{"password": "s3cr3t"})); err != nil {
		t.Fatal(err)
	}

	// 16 clients write until the backup is done.
	loadCtx, stopLoad := context.WithCancel(ctx)
	var (
		mu       sync.Mutex
		acks     []ack
		wg       sync.WaitGroup
		failures atomic.Int64
	)
	for i := range 16 {
		wg.Go(func() {
			for j := 0; loadCtx.Err() == nil; j++ {
				name := fmt.Sprintf("w%02d-%05d", i, j)
				out, err := c1.Create(loadCtx, testkit.Object(api.KindDataObject, api.DefaultNamespace, name))
				if err != nil {
					if loadCtx.Err() == nil {
						failures.Add(1)
					}
					continue
				}
				rv, _ := strconv.ParseInt(out.ResourceVersion, 10, 64)
				mu.Lock()
				acks = append(acks, ack{name, rv})
				mu.Unlock()
			}
		})
	}
	testkit.Eventually(t, 30*time.Second, "the clients to write", func() bool { mu.Lock(); defer mu.Unlock(); return len(acks) >= 200 })
	mu.Lock()
	before := len(acks) // acknowledged before the backup is asked for
	mu.Unlock()
	file := filepath.Join(t.TempDir(), "cairn.backup")
	res := clitest.Run(t, d1.ClientConfig(), "backup", "-o", file)
	mu.Lock()
	n := len(acks)
	mu.Unlock()
	testkit.Eventually(t, 30*time.Second, "more writes after the backup", func() bool { mu.Lock(); defer mu.Unlock(); return len(acks) > n+50 })
	stopLoad()
	wg.Wait()
	if res.Error != nil {
		t.Fatalf("cairn backup: %v\n%s", res.Error, res.Err)
	}
	if failures.Load() > 0 {
		t.Fatalf("%d writes failed under load", failures.Load())
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the backup file: %v (mode %v), want mode 0600", err, st.Mode().Perm())
	}

	// Restore into a new data dir and start a server on it.
	dir := filepath.Join(t.TempDir(), "restored")
	key := filepath.Join(dir1, "encryption.key")
	restored, err := daemon.Restore(daemon.RestoreOptions{From: file, DataDir: dir, EncryptionKeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	_ = d1.Stop()
	d2, c2 := clitest.StartDaemon(t, daemon.Options{DataDir: dir})

	list, err := c2.List(ctx, api.KindDataObject, api.DefaultNamespace, api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]string{}
	for _, o := range list.Items {
		have[o.Name] = o.ResourceVersion
	}
	mu.Lock()
	defer mu.Unlock()
	var in, out int
	for i, a := range acks {
		rv, ok := have[a.name]
		switch {
		case i < before && !ok:
			t.Errorf("%s, acknowledged (rv %d) before the backup was asked for, is not in it", a.name, a.rv)
		case a.rv <= restored.Revision && !ok:
			t.Errorf("%s (rv %d) is not back, though the backup is of revision %d", a.name, a.rv, restored.Revision)
		case a.rv > restored.Revision && ok:
			t.Errorf("%s (rv %d) is back, though the backup is of revision %d", a.name, a.rv, restored.Revision)
		case ok && rv != strconv.FormatInt(a.rv, 10):
			t.Errorf("%s is back with resourceVersion %s, want %d", a.name, rv, a.rv)
		}
		if ok {
			in++
		} else {
			out++
		}
	}
	if in < before || out == 0 {
		t.Fatalf("%d writes back, %d not, %d acknowledged before the backup: the load did not straddle it", in, out, before)
	}
	t.Logf("backup of revision %d (header %d): %d of %d acknowledged writes in it, %d before it was asked for",
		restored.Revision, restored.Header.Revision, in, len(acks), before)

	// The Secret decrypts with the key restored beside it.
	sec, err := c2.Get(ctx, api.KindSecret, api.DefaultNamespace, "db")
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]string
	if err := json.Unmarshal(sec.Field("data"), &data); err != nil || decode(data["password"]) != "s3cr3t" {
		t.Fatalf("the restored secret's data: %v (err %v)", data, err)
	}
	// The first server's admin token works on the restored one.
	old := d2.ClientConfig()
	old.Token = d1.Token()
	oc, err := client.NewHTTP(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oc.Get(ctx, api.KindSecret, api.DefaultNamespace, "db"); err != nil {
		t.Fatalf("the token of the server the backup was taken from: %v", err)
	}
	// And the restored server takes writes after the backup's revision.
	o, err := c2.Create(ctx, testkit.Object(api.KindDataObject, api.DefaultNamespace, "after-restore"))
	if err != nil {
		t.Fatal(err)
	}
	if rv, _ := strconv.ParseInt(o.ResourceVersion, 10, 64); rv <= restored.Revision {
		t.Fatalf("a write after the restore got resourceVersion %d, not above the backup's %d", rv, restored.Revision)
	}
	// The restored data dir restarts like any other.
	if err := d2.Stop(); err != nil {
		t.Fatal(err)
	}
	_, c3 := clitest.StartDaemon(t, daemon.Options{DataDir: dir})
	if _, err := c3.Get(ctx, api.KindDataObject, api.DefaultNamespace, "after-restore"); err != nil {
		t.Fatalf("after a restart of the restored server: %v", err)
	}
}

func decode(s string) string {
	b, _ := base64.StdEncoding.DecodeString(s)
	return string(b)
}

// TestBackup_OnlyAdminsMayReadOne: a token that is no admin's gets 403,
// and no file.
func TestBackup_OnlyAdminsMayReadOne(t *testing.T) {
	d, _ := clitest.StartDaemon(t, daemon.Options{})
	if err := auth.New(d.Store()).Register(testkit.Context(t), "bob-token", identity.User{Name: "bob"}); err != nil {
		t.Fatal(err)
	}
	cfg := d.ClientConfig()
	cfg.Token = "bob-token"
	file := filepath.Join(t.TempDir(), "b")
	res := clitest.Run(t, cfg, "backup", "-o", file)
	if api.ReasonOf(res.Error) != api.ReasonForbidden || !strings.Contains(res.Error.Error(), "only an admin") {
		t.Fatalf("a backup with a user's token: %v, want Forbidden", res.Error)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused backup left %s: %v", file, err)
	}
}

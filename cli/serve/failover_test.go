package serve_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/lease"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store/storetest"
)

// Bounds of the failover test. The lease TTL is what a dead leader blocks
// failover for; the bound allows for the TTL, the etcd lease expiry check
// and a new campaign on a loaded 2-core machine.
const (
	failoverTTL   = 2 * time.Second
	failoverBound = 15 * time.Second
)

// failoverData is the data of every secret the failover test writes.
func failoverData() map[string]string { return map[string]string{"password": "failover-s3cr3t"} }

// serverProc is a `cairn server` process started by startClusterServer,
// with the admin token it wrote.
type serverProc struct {
	*clitest.Proc
	token  string
	caFile string
	hc     *http.Client // trusts the server's CA
}

// startClusterServer runs `cairn server` as a real process on the external
// etcd at endpoint, with its own HOME and data dir and the shared key file,
// and returns it once it logs that it is ready, with its admin token.
func startClusterServer(t *testing.T, bin, endpoint, keyFile string) *serverProc {
	t.Helper()
	home, data := t.TempDir(), filepath.Join(t.TempDir(), "data")
	cmd := exec.Command(bin, append([]string{"server", "--listen", "127.0.0.1:0", "--data-dir", data,
		"--etcd-endpoints", endpoint, "--encryption-key-file", keyFile,
		"--leader-ttl", failoverTTL.String()}, clitest.RuntimeFlags(t, filepath.Join(filepath.Dir(data), "runtime"))...)...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	p := &serverProc{Proc: clitest.Start(t, cmd), caFile: filepath.Join(data, daemon.CAFileName)}
	b, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	p.token = strings.TrimSpace(string(b))
	p.hc = testkit.HTTPClient(t, p.config())
	return p
}

func (p *serverProc) client(t *testing.T) client.Interface {
	t.Helper()
	c, err := client.NewHTTP(p.config())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// config is the client config of the server with the admin token.
func (p *serverProc) config() client.Config {
	return client.Config{Server: p.URL, Token: p.token, CAFile: p.caFile}
}

// metrics reads the server's /metrics and returns the sum of the samples
// of each metric family (all label sets of a counter added up).
func (p *serverProc) metrics(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := p.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET /metrics: %s: %s", resp.Status, b)
	}
	sums := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		// name{labels} value [timestamp]; label values here hold no spaces.
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		name, _, _ := strings.Cut(fields[0], "{")
		v, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		sums[name] += v
	}
	return sums, sc.Err()
}

// TestServer_LeaderKilled_FailoverToOtherServerFinishesCascade runs two
// `cairn server` processes on one external etcd, deletes an owner with many
// dependents and SIGKILLs the elected leader, so it neither resigns nor
// revokes its lease: either at once after the delete, or as soon as its
// collector has removed the first dependent (mid-cascade, with writes in
// flight). Dependents must remain at the kill, so the failover is really
// exercised. The other server must become leader within a bound derived
// from the lease TTL and finish the cascade, and its /metrics must show it
// leading and its collector acting.
func TestServer_LeaderKilled_FailoverToOtherServerFinishesCascade(t *testing.T) {
	bin := clitest.BuildCairn(t)
	for _, tc := range []struct {
		name string
		// dependents of the deleted owner: enough that the leader cannot
		// finish the cascade before it is killed.
		dependents int
		// killAfterFirstDeletion waits until the survivor's watch shows a
		// dependent deleted by the leader's collector before the kill.
		killAfterFirstDeletion bool
	}{
		{name: "at once after the owner's delete", dependents: 300},
		{name: "after its collector deleted the first dependent", dependents: 1000, killAfterFirstDeletion: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testFailover(t, bin, tc.dependents, tc.killAfterFirstDeletion)
		})
	}
}

func testFailover(t *testing.T, bin string, dependents int, killAfterFirstDeletion bool) {
	_, endpoint := storetest.Start(t)
	keyFile := filepath.Join(t.TempDir(), "shared.key")
	if _, err := registry.LoadOrCreateKey(keyFile); err != nil {
		t.Fatal(err)
	}
	a := startClusterServer(t, bin, endpoint, keyFile)
	b := startClusterServer(t, bin, endpoint, keyFile)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var lead, survivor *serverProc
	ac := a.client(t)
	testkit.Eventually(t, failoverBound, "a leader", func() bool {
		switch id, _ := lease.Current(ctx, ac, manager.LeaseName); id {
		case a.URL:
			lead, survivor = a, b
		case b.URL:
			lead, survivor = b, a
		}
		return lead != nil
	})
	lc, sc := lead.client(t), survivor.client(t)

	// The owner through the leader, its dependents through the survivor:
	// both processes serve the API on the shared etcd.
	owner, err := lc.Create(ctx, testkit.Secret("default", "owner", failoverData()))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, dependents)
	names := make(chan string)
	for range 8 {
		wg.Go(func() {
			for n := range names {
				if _, err := sc.Create(ctx, testkit.Secret("default", n, failoverData(), testkit.OwnedBy(owner))); err != nil {
					errs <- fmt.Errorf("create %s: %w", n, err)
				}
			}
		})
	}
	for i := range dependents {
		names <- fmt.Sprintf("dep%d", i)
	}
	close(names)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	l, err := sc.List(ctx, "Secret", "default", api.ListOptions{})
	if err != nil || len(l.Items) != dependents+1 {
		t.Fatalf("before the delete: %d secrets (err %v), want %d", len(l.Items), err, dependents+1)
	}
	w, err := sc.Watch(ctx, "Secret", "default", api.ListOptions{ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// Delete, then kill the leader: no resign, its lease must expire.
	if _, gone, err := sc.Delete(ctx, "Secret", "default", "owner", api.DeleteOptions{}); err != nil || gone {
		t.Fatalf("delete owner: gone=%v err=%v, want marked for deletion", gone, err)
	}
	if killAfterFirstDeletion {
		waitFirstDeletion(t, w)
	}
	lead.Kill(t)
	killed := time.Now()

	l, err = sc.List(ctx, "Secret", "default", api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	remaining := len(l.Items) - 1 // all but the owner
	if _, err := sc.Get(ctx, "Secret", "default", "owner"); err != nil {
		t.Fatalf("owner at the kill: %v, want it still present with its dependents", err)
	}
	if remaining <= 0 {
		t.Fatalf("the cascade of %d dependents finished before the leader was killed: the test did not exercise failover (raise the dependents)", dependents)
	}
	t.Logf("leader %s killed with %d of %d dependents remaining", lead.URL, remaining, dependents)

	testkit.Eventually(t, failoverBound, "the survivor to become leader", func() bool {
		id, _ := lease.Current(ctx, sc, manager.LeaseName)
		return id == survivor.URL
	})
	t.Logf("survivor %s leader %v after the kill (lease TTL %v)", survivor.URL, time.Since(killed).Round(time.Millisecond), failoverTTL)

	testkit.Eventually(t, 60*time.Second, "the cascade to finish through the survivor", func() bool {
		l, err := sc.List(ctx, "Secret", "default", api.ListOptions{})
		return err == nil && len(l.Items) == 0
	})
	if _, err := sc.Get(ctx, "Secret", "default", "owner"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("owner after the cascade: %v, want NotFound", err)
	}
	t.Logf("cascade finished %v after the kill", time.Since(killed).Round(time.Millisecond))

	m, err := survivor.metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m["cairn_leader"] != 1 {
		t.Errorf("survivor cairn_leader = %v, want 1", m["cairn_leader"])
	}
	if m["cairn_gc_actions_total"] <= 0 {
		t.Errorf("survivor cairn_gc_actions_total = %v, want > 0", m["cairn_gc_actions_total"])
	}
}

// waitFirstDeletion blocks until w reports a dependent removed (the owner
// itself cannot go before all its dependents).
func waitFirstDeletion(t *testing.T, w api.Watcher) {
	t.Helper()
	timeout := time.After(failoverBound)
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("watch ended before any dependent was deleted: %v", w.Err())
			}
			if ev.Type == api.Deleted {
				return
			}
		case <-timeout:
			t.Fatalf("no dependent deleted %v after the owner's delete", failoverBound)
		}
	}
}

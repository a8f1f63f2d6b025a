package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
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
	"cairn.dev/cairn/client"
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

// serverProc is a `cairn server` process started by startClusterServer.
type serverProc struct {
	cmd   *exec.Cmd
	url   string
	token string
	log   *procLog
	done  chan struct{} // closed when the process has exited and its output is read
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *serverProc) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("server %s still running 30s after SIGKILL", p.url)
	}
}

// procLog collects a process's stderr and reports the URL of its ready
// line. It is safe for concurrent use.
type procLog struct {
	mu      sync.Mutex
	all     bytes.Buffer
	partial []byte
	ready   chan string
}

func (l *procLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Write(b)
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		if m := readyLine.FindStringSubmatch(line); m != nil {
			select {
			case l.ready <- m[1]:
			default:
			}
		}
	}
	return len(b), nil
}

func (l *procLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all.String()
}

// startClusterServer runs `cairn server` as a real process on the external
// etcd at endpoint, with its own HOME and data dir and the shared key file,
// and returns it once it logs that it is ready, with its admin token.
func startClusterServer(t *testing.T, bin, endpoint, keyFile string) *serverProc {
	t.Helper()
	home, data := t.TempDir(), filepath.Join(t.TempDir(), "data")
	cmd := exec.Command(bin, "server", "--listen", "127.0.0.1:0", "--data-dir", data,
		"--etcd-endpoints", endpoint, "--encryption-key-file", keyFile,
		"--leader-ttl", failoverTTL.String())
	cmd.Env = append(os.Environ(), "HOME="+home)
	p := &serverProc{cmd: cmd, log: &procLog{ready: make(chan string, 1)}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("log of the server started as %s:\n%s", p.url, p.log.String())
		}
	})
	select {
	case p.url = <-p.log.ready:
	case <-p.done:
		t.Fatalf("server exited before it was ready:\n%s", p.log.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("server not ready after 60s:\n%s", p.log.String())
	}
	b, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	p.token = strings.TrimSpace(string(b))
	return p
}

func (p *serverProc) client(t *testing.T) client.Interface {
	t.Helper()
	c, err := client.NewHTTP(client.Config{Server: p.url, Token: p.token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// metrics reads the server's /metrics and returns the sum of the samples
// of each metric family (all label sets of a counter added up).
func (p *serverProc) metrics(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := http.DefaultClient.Do(req)
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

func failoverSecret(name string, owner *api.Object) *api.Object {
	o := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Secret"}}
	o.Name, o.Namespace = name, "default"
	o.SetField("stringData", json.RawMessage(`{"password":"failover-s3cr3t"}`))
	if owner != nil {
		o.OwnerReferences = []api.OwnerReference{api.OwnerRefTo(owner, false)}
	}
	return o
}

// waitFor polls cond every 50ms until it holds or d has passed.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
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
	bin := buildCairn(t)
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
	waitFor(t, failoverBound, "a leader", func() bool {
		switch id, _ := lease.Current(ctx, a.client(t), manager.LeaseName); id {
		case a.url:
			lead, survivor = a, b
		case b.url:
			lead, survivor = b, a
		}
		return lead != nil
	})
	lc, sc := lead.client(t), survivor.client(t)

	// The owner through the leader, its dependents through the survivor:
	// both processes serve the API on the shared etcd.
	owner, err := lc.Create(ctx, failoverSecret("owner", nil))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, dependents)
	names := make(chan string)
	for range 8 {
		wg.Go(func() {
			for n := range names {
				if _, err := sc.Create(ctx, failoverSecret(n, owner)); err != nil {
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
	lead.kill(t)
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
	t.Logf("leader %s killed with %d of %d dependents remaining", lead.url, remaining, dependents)

	waitFor(t, failoverBound, "the survivor to become leader", func() bool {
		id, _ := lease.Current(ctx, sc, manager.LeaseName)
		return id == survivor.url
	})
	t.Logf("survivor %s leader %v after the kill (lease TTL %v)", survivor.url, time.Since(killed).Round(time.Millisecond), failoverTTL)

	waitFor(t, 60*time.Second, "the cascade to finish through the survivor", func() bool {
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

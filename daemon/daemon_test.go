package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/lease"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/store/storetest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func start(t *testing.T, opts daemon.Options) *daemon.Daemon {
	t.Helper()
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	opts.Logger = quiet
	clitest.RuntimeDefaults(t, &opts)
	d, err := daemon.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop() })
	return d
}

func httpClient(t *testing.T, d *daemon.Daemon) client.Interface {
	t.Helper()
	c, err := client.NewHTTP(d.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// dataDir returns a data dir for a server, not created yet: t.TempDir()
// itself has mode 0755, which the server refuses.
func dataDir(t *testing.T) string { return filepath.Join(t.TempDir(), "data") }

// password is the data every test secret holds.
func password() map[string]string { return map[string]string{"password": "s3cr3t-value"} }

func TestDaemon_FirstStartWritesTokenAndConfigWithPrivateModes(t *testing.T) {
	dir := dataDir(t)
	cfg := filepath.Join(t.TempDir(), "home", ".cairn", "config")
	d := start(t, daemon.Options{DataDir: dir, ClientConfigPath: cfg})
	kubeconfig := filepath.Join(filepath.Dir(cfg), daemon.KubeconfigName)
	for _, p := range []string{filepath.Join(dir, "admin.token"), filepath.Join(dir, "encryption.key"), cfg, kubeconfig} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", p, st.Mode().Perm())
		}
	}
	got, err := client.LoadConfig(cfg)
	if err != nil || got.Server != d.URL() || got.Token != d.Token() {
		t.Fatalf("client config %+v (err %v), want server %s and the admin token", got, err, d.URL())
	}
	// The config written carries the CA: a client of it speaks TLS to the
	// server, and one without it is refused.
	resp, err := testkit.HTTPClient(t, got).Get(d.URL() + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	if !strings.HasPrefix(d.URL(), "https://") {
		t.Fatalf("the server does not speak HTTPS: %s", d.URL())
	}
	if _, err := http.Get(d.URL() + "/healthz"); err == nil {
		t.Fatal("a client that does not trust the CA connected")
	}
	// The kubeconfig works for client-go: context cairn, the CA, the token.
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil || raw.CurrentContext != "cairn" {
		t.Fatalf("kubeconfig context %q (%v), want cairn", raw.CurrentContext, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := dc.ServerVersion(); err != nil || !strings.Contains(v.GitVersion, "cairn") {
		t.Fatalf("client-go through the kubeconfig: %+v, %v", v, err)
	}
	if ca, err := os.ReadFile(filepath.Join(dir, daemon.CAFileName)); err != nil || !strings.Contains(string(ca), "BEGIN CERTIFICATE") {
		t.Fatalf("%s: %v", daemon.CAFileName, err)
	}
}

func TestDaemon_RestartOnSameDataDirKeepsEveryObject(t *testing.T) {
	dir := dataDir(t)
	d := start(t, daemon.Options{DataDir: dir})
	c := httpClient(t, d)
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		if _, err := c.Create(ctx, testkit.Secret("default", fmt.Sprintf("keep%d", i), password())); err != nil {
			t.Fatal(err)
		}
	}
	token := d.Token()
	if err := d.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	d2 := start(t, daemon.Options{DataDir: dir})
	if d2.Token() != token {
		t.Fatalf("admin token changed across a restart")
	}
	l, err := httpClient(t, d2).List(ctx, "Secret", "default", api.ListOptions{})
	if err != nil || len(l.Items) != 20 {
		t.Fatalf("after restart: %d secrets (err %v), want 20", len(l.Items), err)
	}
	var s api.Secret
	if err := l.Items[0].Into(&s); err != nil || string(s.Data["password"]) != "s3cr3t-value" {
		t.Fatalf("secret value after restart: %v", err)
	}
}

// gcActions sums cairn_gc_actions_total in a daemon's metrics; -1 when the
// collector never ran there.
func gcActions(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "cairn_gc_actions_total" {
			sum := 0.0
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	return -1
}

// TestDaemon_TwoServersOneEtcd_OneCollectorActsAndFailoverFinishesCascade
// runs two API servers on one etcd: both serve the API, only the elected
// leader's garbage collector acts, and when the leader stops in the middle
// of a cascade the other server takes over and finishes it.
func TestDaemon_TwoServersOneEtcd_OneCollectorActsAndFailoverFinishesCascade(t *testing.T) {
	_, endpoint := storetest.Start(t)
	key := filepath.Join(t.TempDir(), "shared.key")
	opts := func() daemon.Options {
		return daemon.Options{DataDir: dataDir(t), EtcdEndpoints: []string{endpoint}, EncryptionKeyFile: key,
			Controllers: controllers.List(controllers.Config{}), LeaderTTL: 2 * time.Second}
	}
	d1, d2 := start(t, opts()), start(t, opts())
	ctx := context.Background()
	c1, c2 := httpClient(t, d1), httpClient(t, d2)

	var lead, follow *daemon.Daemon
	testkit.Eventually(t, 15*time.Second, "a leader", func() bool {
		id, _ := lease.Current(ctx, c1, manager.LeaseName)
		switch id {
		case d1.URL():
			lead, follow = d1, d2
		case d2.URL():
			lead, follow = d2, d1
		}
		return lead != nil
	})

	// A small cascade created through one server, deleted through the other.
	owner, err := c1.Create(ctx, testkit.Secret("default", "owner", password()))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if _, err := c2.Create(ctx, testkit.Secret("default", fmt.Sprintf("dep%d", i), password(), testkit.OwnedBy(owner))); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c2.Delete(ctx, "Secret", "default", "owner", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the first cascade", func() bool {
		l, err := c1.List(ctx, "Secret", "default", api.ListOptions{})
		return err == nil && len(l.Items) == 0
	})
	if got := gcActions(t, follow.Metrics()); got > 0 {
		t.Fatalf("the follower's collector acted %v times", got)
	}
	if got := gcActions(t, lead.Metrics()); got <= 0 {
		t.Fatalf("the leader's collector did not act (actions %v)", got)
	}

	// A larger cascade; the leader stops as soon as it starts.
	big, err := c1.Create(ctx, testkit.Secret("default", "big", password()))
	if err != nil {
		t.Fatal(err)
	}
	lc := follow.Client()
	for i := 0; i < 300; i++ {
		if _, err := lc.Create(ctx, testkit.Secret("default", fmt.Sprintf("big%d", i), password(), testkit.OwnedBy(big))); err != nil {
			t.Fatal(err)
		}
	}
	survivor := httpClient(t, follow)
	if _, _, err := survivor.Delete(ctx, "Secret", "default", "big", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := lead.Stop(); err != nil {
		t.Fatalf("stop leader: %v", err)
	}
	left, err := survivor.List(ctx, "Secret", "default", api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Items) == 0 {
		t.Fatal("the cascade finished before the leader stopped: the test exercises no failover")
	}
	testkit.Eventually(t, 15*time.Second, "failover to the other server", func() bool {
		id, _ := lease.Current(ctx, survivor, manager.LeaseName)
		return id == follow.URL()
	})
	testkit.Eventually(t, 60*time.Second, "the cascade to finish on the new leader", func() bool {
		l, err := survivor.List(ctx, "Secret", "default", api.ListOptions{})
		return err == nil && len(l.Items) == 0
	})
	if _, err := survivor.Get(ctx, "Secret", "default", "big"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("owner still present: %v", err)
	}
	if got := gcActions(t, follow.Metrics()); got <= 0 {
		t.Fatalf("the new leader's collector did not act (actions %v) although %d objects were left", got, len(left.Items))
	}
}

func TestDaemon_PureAPIServerRunsNoControllersButStillCompacts(t *testing.T) {
	_, endpoint := storetest.Start(t)
	d := start(t, daemon.Options{DataDir: dataDir(t), EtcdEndpoints: []string{endpoint},
		CompactionInterval: 200 * time.Millisecond})
	c := httpClient(t, d)
	ctx := context.Background()
	if _, err := c.Create(ctx, testkit.Secret("default", "x", password())); err != nil {
		t.Fatal(err)
	}
	obj, gone, err := c.Delete(ctx, "Secret", "default", "x", api.DeleteOptions{})
	if err != nil || gone || !obj.Deleting() {
		t.Fatalf("delete: gone=%v err=%v", gone, err)
	}
	// The compactor is elected and compacts: a watch from the first
	// revision becomes Gone.
	testkit.Eventually(t, 15*time.Second, "compaction without controllers", func() bool {
		w, err := c.Watch(ctx, "Secret", "default", api.ListOptions{ResourceVersion: "1"})
		if err == nil {
			w.Stop()
		}
		return errors.Is(err, api.ErrExpired)
	})
	// No server ever campaigned for the controllers, so nothing collects.
	if id, err := lease.Current(ctx, c, manager.LeaseName); err != nil || id != "" {
		t.Fatalf("controllers leader %q (err %v), want none", id, err)
	}
	if got := gcActions(t, d.Metrics()); got != -1 {
		t.Fatalf("a collector ran (actions %v)", got)
	}
	got, err := c.Get(ctx, "Secret", "default", "x")
	if err != nil || !got.HasFinalizer(api.FinalizerCascadeDeletion) {
		t.Fatalf("without controllers the object must stay marked: %v %v", got, err)
	}
}

func TestDaemon_RejectsSettingsThatCannotWork(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    daemon.Options
		mention string
	}{
		{"negative compaction interval", daemon.Options{CompactionInterval: -time.Second}, "compaction interval"},
		{"negative bookmark interval", daemon.Options{BookmarkInterval: -time.Second}, "bookmark interval"},
		{"sub-second leader TTL", daemon.Options{LeaderTTL: 100 * time.Millisecond}, "leader TTL"},
		{"advertised URL without a scheme", daemon.Options{AdvertiseURL: "10.0.0.5:7070"}, "advertised URL"},
		{"store quota below the minimum", daemon.Options{StoreQuota: 1 << 20}, "store quota must be at least 16Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.DataDir, tc.opts.Listen, tc.opts.Logger = t.TempDir(), "127.0.0.1:0", quiet
			d, err := daemon.Start(context.Background(), tc.opts)
			if err == nil {
				_ = d.Stop()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %q does not name %q", err, tc.mention)
			}
		})
	}
}

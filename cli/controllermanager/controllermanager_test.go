package controllermanager_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/lease"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/server/servertest"
)

const leaderTTL = 2 * time.Second

// startManager runs `cairn controller-manager` as a real process against
// the API server at url, whose certificate is issued by the CA ca (PEM).
func startManager(t *testing.T, bin, url string, ca []byte, tokenFile string) *clitest.Proc {
	t.Helper()
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"controller-manager", "--server", url, "--certificate-authority", caFile, "--token-file", tokenFile,
		"--listen", "127.0.0.1:0", "--leader-ttl", leaderTTL.String()}, clitest.RuntimeFlags(t, filepath.Join(t.TempDir(), "runtime"))...)...)
	return clitest.Start(t, cmd)
}

func writeToken(t *testing.T, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestControllerManager_ActiveKilledMidCascade_StandbyFinishesIt runs two
// controller managers against one pure API server (no controllers of its
// own), deletes a namespace holding thousands of objects, SIGKILLs the
// active manager once the cascade is under way, and checks that the other
// one takes the lease and finishes the cascade.
func TestControllerManager_ActiveKilledMidCascade_StandbyFinishesIt(t *testing.T) {
	const objects = 4000
	srv := servertest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	bin := clitest.BuildCairn(t)
	tokenFile := writeToken(t, srv.Token)
	procs := map[string]*clitest.Proc{}
	for range 2 {
		p := startManager(t, bin, srv.URL, srv.CA, tokenFile)
		procs[p.URL] = p
	}
	var active string
	testkit.Eventually(t, 30*time.Second, "one controller manager holds the lease", func() bool {
		active, _ = lease.Current(ctx, c, manager.LeaseName)
		return procs[active] != nil
	})

	if _, err := c.Create(ctx, testkit.Object(api.KindNamespace, "", "demo")); err != nil {
		t.Fatal(err)
	}
	createMany(t, c, "demo", objects)
	w, err := c.Watch(ctx, api.KindSecret, "demo", api.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, _, err := c.Delete(ctx, api.KindNamespace, "", "demo", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for ev := range w.Events() {
		if ev.Type == api.Deleted {
			deleted++
		}
		if deleted == 50 {
			break
		}
	}
	procs[active].Kill(t)
	l, err := c.List(ctx, api.KindSecret, "demo", api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) == 0 {
		t.Fatalf("the cascade of %d objects finished before the active manager was killed: the test proves nothing", objects)
	}
	t.Logf("killed the active manager with %d of %d objects left", len(l.Items), objects)

	var standby string
	for u := range procs {
		if u != active {
			standby = u
		}
	}
	testkit.Eventually(t, 60*time.Second, "the standby manager finishes the cascade", func() bool {
		_, err := c.Get(ctx, api.KindNamespace, "", "demo")
		return errors.Is(err, api.ErrNotFound)
	})
	if holder, err := lease.Current(ctx, c, manager.LeaseName); err != nil || holder != standby {
		t.Fatalf("lease holder after failover: %q (%v), want the standby %s", holder, err, standby)
	}
	l, err = c.List(ctx, api.KindSecret, "demo", api.ListOptions{})
	if err != nil || len(l.Items) != 0 {
		t.Fatalf("objects left after the namespace went: %d (%v)", len(l.Items), err)
	}
}

// createMany creates n Secrets in ns with 16 concurrent clients.
func createMany(t *testing.T, c client.Interface, ns string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				o := testkit.Secret(ns, fmt.Sprintf("s-%05d", i), nil, testkit.StringData(map[string]string{"k": "v"}))
				if _, err := c.Create(context.Background(), o); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestControllerManager_BadSettingsAreClearErrors(t *testing.T) {
	bin := clitest.BuildCairn(t)
	loose := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(loose, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	tight := writeToken(t, "x")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no server", []string{"--token-file", tight}, "--server is required"},
		{"no token file", []string{"--server", "http://127.0.0.1:1"}, "--token-file is required"},
		{"token readable by others", []string{"--server", "http://127.0.0.1:1", "--token-file", loose}, "chmod 600"},
		{"unknown controller", []string{"--server", "http://127.0.0.1:1", "--token-file", tight, "--controllers", "gc,nope"}, `unknown controller "nope"`},
		{"bad advertised URL", []string{"--server", "http://127.0.0.1:1", "--token-file", tight, "--advertise-url", "10.0.0.1:7071"}, "--advertise-url"},
		{"no controller", []string{"--server", "http://127.0.0.1:1", "--token-file", tight, "--controllers", "false"}, "selects no controller"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(bin, append([]string{"controller-manager"}, tc.args...)...).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || !strings.Contains(string(out), tc.want) {
				t.Fatalf("err %v, output %q, want it to say %q", err, out, tc.want)
			}
		})
	}
}

// TestControllerManager_TracesForwardedFromAPIServerToIt: `cairn explain`
// against a pure API server reaches the traces kept by the controller
// manager that leads, through the server's forwarding; the manager checks
// the caller's token with the API server.
func TestControllerManager_TracesForwardedFromAPIServerToIt(t *testing.T) {
	d, c := clitest.StartDaemon(t, daemon.Options{}) // a pure API server: no controllers
	ctx := context.Background()
	cm := startManager(t, clitest.BuildCairn(t), d.URL(), d.CA(), writeToken(t, d.Token()))
	testkit.Eventually(t, 30*time.Second, "the controller manager to lead", func() bool {
		holder, _ := lease.Current(ctx, c, manager.LeaseName)
		return holder == cm.URL
	})

	if _, err := c.Create(ctx, testkit.Object(api.KindNamespace, "", "demo")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, testkit.Object(api.KindSecret, "demo", "held", testkit.Finalizers("example.com/hold"))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Delete(ctx, api.KindNamespace, "", "demo", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "explain through the API server to name what holds the namespace", func() bool {
		res := clitest.Run(t, d.ClientConfig(), "explain", "namespace/demo")
		return res.Error == nil && strings.Contains(res.Out, "waits for Secret demo/held") &&
			strings.Contains(res.Out, "example.com/hold")
	})

	// The manager's own address serves the same path, to callers the API
	// server accepts and lets read the object.
	path := cm.URL + api.BasePath + "/namespaces/demo/trace"
	scoped, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.New(d.Store()).Register(ctx, scoped, identity.User{Name: "event:demo/e1", Scope: "demo/e1"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		path  string
		token string
		code  int
	}{
		{"admin", path, d.Token(), http.StatusOK},
		{"no token", path, "", http.StatusUnauthorized},
		{"unknown token", path, "not-a-token", http.StatusUnauthorized},
		{"scoped token that may not read the namespace", path, scoped, http.StatusForbidden},
		{"metrics for an admin", cm.URL + "/metrics", d.Token(), http.StatusOK},
		{"metrics for a scoped token", cm.URL + "/metrics", scoped, http.StatusForbidden},
	} {
		req, _ := http.NewRequest(http.MethodGet, tc.path, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := testkit.HTTPClient(t, d.ClientConfig()).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s: GET %s = %d, want %d", tc.name, tc.path, resp.StatusCode, tc.code)
		}
	}

	// As an API server forwards: a cairn peer asserting the caller, which
	// the manager has the API server authorize as that caller; the
	// assertion counts from a cairn peer only.
	if !strings.HasPrefix(cm.URL, "https://") {
		t.Fatalf("the controller manager serves %s, want HTTPS with its peer certificate", cm.URL)
	}
	peer := testkit.PeerClient(t, d.ClientConfig(), testkit.PeerCertificate(t, d.ClientConfig()))
	for _, tc := range []struct {
		name   string
		client *http.Client
		user   identity.User
		code   int
	}{
		{"peer asserting an admin", peer, auth.AdminUser(), http.StatusOK},
		{"peer asserting a worker", peer, identity.User{Name: "event:demo/e1", Scope: "demo/e1"}, http.StatusForbidden},
		{"no peer certificate, asserting an admin", testkit.HTTPClient(t, d.ClientConfig()), auth.AdminUser(), http.StatusUnauthorized},
	} {
		if code := testkit.AsPeer(t, tc.client, path, tc.user); code != tc.code {
			t.Errorf("%s: GET %s = %d, want %d", tc.name, path, code, tc.code)
		}
	}
}

package serve_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

// startServer runs `cairn server` as a real process with HOME at home and
// returns it once it logs its ready line.
func startServer(t *testing.T, bin, home, dataDir string) *clitest.Proc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"server", "--listen", "127.0.0.1:0", "--data-dir", dataDir},
		clitest.RuntimeFlags(t, filepath.Join(filepath.Dir(dataDir), "runtime"))...)...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	return clitest.Start(t, cmd)
}

func TestServer_SIGTERMShutsDownCleanlyAndRestartKeepsObjects(t *testing.T) {
	bin := clitest.BuildCairn(t)
	home, data := t.TempDir(), filepath.Join(t.TempDir(), "data")
	srv := startServer(t, bin, home, data)
	url := srv.URL

	cfg, err := client.LoadConfig(filepath.Join(home, ".cairn", "config"))
	if err != nil || cfg.Server != url {
		t.Fatalf("client config %+v (err %v), want server %s", cfg, err, url)
	}
	c, err := client.NewHTTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Create(ctx, testkit.Secret("default", "kept", map[string]string{"k": "v"})); err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(ctx, "Secret", "default", api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	if err := srv.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.Done():
		if st := srv.Cmd.ProcessState; !st.Success() {
			t.Fatalf("server exited with %v after SIGTERM, want 0", st)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("server did not stop within 30s of SIGTERM")
	}
	for range w.Events() { // the open watch ends with the server
	}

	url2 := startServer(t, bin, home, data).URL
	cfg2, err := client.ResolveConfig(url2, cfg.Token, filepath.Join(home, ".cairn", "config"))
	if err != nil {
		t.Fatal(err)
	}
	c2, err := client.NewHTTP(cfg2)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c2.Get(ctx, "Secret", "default", "kept")
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	var sec api.Secret
	if err := got.Into(&sec); err != nil || string(sec.Data["k"]) != "v" {
		t.Fatalf("secret after restart: %v %v", sec.Data, err)
	}
}

func TestServer_BadFlagsAreClearErrors(t *testing.T) {
	bin := clitest.BuildCairn(t)
	out, err := exec.Command(bin, "server", "--log-level", "loud", "--data-dir", t.TempDir()).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "--log-level") {
		t.Fatalf("bad --log-level: err %v, output %q", err, out)
	}
	out, err = exec.Command(bin, "server", "--store-timeout", "0s", "--data-dir", t.TempDir()).CombinedOutput()
	if !errors.As(err, &exit) || !strings.Contains(string(out), "--store-timeout must be positive") {
		t.Fatalf("--store-timeout 0s: err %v, output %q", err, out)
	}
}

func TestServer_StoreQuotaFlagSetsTheQuotaAndRefusesBadSizes(t *testing.T) {
	bin := clitest.BuildCairn(t)
	for _, tc := range []struct{ value, mention string }{
		{"lots", "--store-quota"},
		{"-1Gi", "--store-quota"},
		{"1Mi", "at least 16Mi"},
	} {
		out, err := exec.Command(bin, "server", "--store-quota", tc.value, "--data-dir", t.TempDir()).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || !strings.Contains(string(out), tc.mention) {
			t.Fatalf("--store-quota %s: err %v, output %q; want a refusal naming %q", tc.value, err, out, tc.mention)
		}
	}

	home := t.TempDir()
	cmd := exec.Command(bin, append([]string{"server", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "data"), "--store-quota", "32Mi"},
		clitest.RuntimeFlags(t, filepath.Join(t.TempDir(), "runtime"))...)...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	srv := clitest.Start(t, cmd)
	cfg, err := client.LoadConfig(filepath.Join(home, ".cairn", "config"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+cfg.Token)
	resp, err := testkit.HTTPClient(t, cfg).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "\ncairn_store_quota_bytes 3.3554432e+07\n") {
		t.Fatalf("/metrics does not report the 32Mi quota:\n%s", body)
	}
}

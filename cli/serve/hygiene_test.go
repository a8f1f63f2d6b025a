package serve_test

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

// TestServer_RequestBodyTimeoutFlagCutsSlowBodies runs `cairn server
// --request-body-timeout 1s` and sends a create whose body trickles in at
// one byte per 200ms: the server answers 408 and closes the connection.
// A bad value of the flag is a clear error.
func TestServer_RequestBodyTimeoutFlagCutsSlowBodies(t *testing.T) {
	bin := clitest.BuildCairn(t)
	out, err := exec.Command(bin, "server", "--request-body-timeout", "0s", "--data-dir", t.TempDir()).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "--request-body-timeout") {
		t.Fatalf("--request-body-timeout 0s: err %v, output %q", err, out)
	}

	home := t.TempDir()
	cmd := exec.Command(bin, append([]string{"server", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--request-body-timeout", "1s"}, clitest.RuntimeFlags(t, filepath.Join(t.TempDir(), "runtime"))...)...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	srv := clitest.Start(t, cmd)
	cfg, err := client.LoadConfig(filepath.Join(home, ".cairn", "config"))
	if err != nil {
		t.Fatal(err)
	}

	body := `{"apiVersion":"cairn.dev/v1alpha1","kind":"Secret","metadata":{"name":"slow"},"stringData":{"k":"v"}}`
	tlsConfig, err := cfg.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	resp, raw, closed := testkit.SlowPost(t, srv.URL, "/apis/cairn.dev/v1alpha1/namespaces/default/secrets", cfg.Token, []byte(body), tlsConfig)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(raw), `"reason":"RequestTimeout"`) {
		t.Fatalf("got %d %s, want 408 RequestTimeout", resp.StatusCode, raw)
	}
	if !closed {
		t.Error("the connection is still open after the 408")
	}
}

package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// buildCairn compiles the cairn binary once for the test.
func buildCairn(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cairn")
	out, err := exec.Command("go", "build", "-o", bin, "cairn.dev/cairn/cmd/cairn").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

var readyLine = regexp.MustCompile(`cairn server ready"? url=(http://\S+)`)

// startServer runs `cairn server` as a real process with HOME at home and
// returns it with its URL, read from its log (the rest of the log is
// discarded).
func startServer(t *testing.T, bin, home, dataDir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, "server", "--listen", "127.0.0.1:0", "--data-dir", dataDir)
	cmd.Env = append(os.Environ(), "HOME="+home)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case u := <-urls:
		return cmd, u
	case <-time.After(60 * time.Second):
		t.Fatalf("server not ready after 60s")
	}
	return nil, ""
}

func TestServer_SIGTERMShutsDownCleanlyAndRestartKeepsObjects(t *testing.T) {
	bin := buildCairn(t)
	home, data := t.TempDir(), filepath.Join(t.TempDir(), "data")
	cmd, url := startServer(t, bin, home, data)

	cfg, err := client.LoadConfig(filepath.Join(home, ".cairn", "config"))
	if err != nil || cfg.Server != url {
		t.Fatalf("client config %+v (err %v), want server %s", cfg, err, url)
	}
	c, err := client.NewHTTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Secret"}}
	s.Name, s.Namespace = "kept", "default"
	s.SetField("stringData", json.RawMessage(`{"k":"v"}`))
	if _, err := c.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(ctx, "Secret", "default", api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("server exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("server did not stop within 30s of SIGTERM")
	}
	for range w.Events() { // the open watch ends with the server
	}

	_, url2 := startServer(t, bin, home, data)
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
	bin := buildCairn(t)
	out, err := exec.Command(bin, "server", "--log-level", "loud", "--data-dir", t.TempDir()).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "--log-level") {
		t.Fatalf("bad --log-level: err %v, output %q", err, out)
	}
}

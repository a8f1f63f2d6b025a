package serve_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
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
	cmd := exec.Command(bin, "server", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--request-body-timeout", "1s")
	cmd.Env = append(os.Environ(), "HOME="+home)
	srv := clitest.Start(t, cmd)
	cfg, err := client.LoadConfig(filepath.Join(home, ".cairn", "config"))
	if err != nil {
		t.Fatal(err)
	}

	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"apiVersion":"cairn.dev/v1alpha1","kind":"Secret","metadata":{"name":"slow"},"stringData":{"k":"v"}}`
	fmt.Fprintf(conn, "POST /apis/cairn.dev/v1alpha1/namespaces/default/secrets HTTP/1.1\r\nHost: cairn\r\n"+
		"Authorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", cfg.Token, len(body))
	answered := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range len(body) {
			select {
			case <-answered:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := conn.Write([]byte{body[i]}); err != nil {
				return
			}
		}
	}()
	defer func() { <-done }()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	rd := bufio.NewReader(conn)
	resp, err := http.ReadResponse(rd, nil)
	close(answered)
	if err != nil {
		t.Fatalf("no answer to a slow body: %v", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(raw), `"reason":"RequestTimeout"`) {
		t.Fatalf("got %d %s, want 408 RequestTimeout", resp.StatusCode, raw)
	}
	// The server closes the connection: a clean EOF, or a reset when the
	// client's unread bytes were still in flight as it closed.
	if _, err := rd.ReadByte(); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("the connection is still open after the 408: %v", err)
	}
}

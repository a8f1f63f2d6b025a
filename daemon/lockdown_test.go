package daemon_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/embedded"
)

// TestDaemon_ListensOnTCPOnlyForItsHTTPAPI compares this process's
// listening TCP sockets before and after a whole server starts: the HTTP
// API's must be the only new one. No test of this package runs in
// parallel, so no other test opens a listener meanwhile.
func TestDaemon_ListensOnTCPOnlyForItsHTTPAPI(t *testing.T) {
	dir := dataDir(t)
	before := testkit.ListeningTCP(t)
	d := start(t, daemon.Options{DataDir: dir, Controllers: controllers.List(controllers.Config{})})
	after := testkit.ListeningTCP(t)

	u, err := url.Parse(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	var ports []int
	for ino, port := range after {
		if _, ok := before[ino]; !ok {
			ports = append(ports, port)
		}
	}
	if len(ports) != 1 || strconv.Itoa(ports[0]) != u.Port() {
		t.Fatalf("the server listens on TCP ports %v, want only its HTTP port %s", ports, u.Port())
	}
	if want := "unix://" + filepath.Join(dir, embedded.SocketName); d.EtcdEndpoint() != want {
		t.Fatalf("etcd endpoint %q, want %q", d.EtcdEndpoint(), want)
	}
}

// readerEnv carries the etcd endpoint to TestHelper_ReadEtcd when it runs
// in a child process.
const readerEnv = "CAIRN_TEST_READ_ETCD"

// TestHelper_ReadEtcd is not a test of its own: run in a child process by
// TestDaemon_EmbeddedEtcdRefusesOtherLocalUsers, it connects to the
// endpoint in readerEnv and prints what became of the connection and of a
// read.
func TestHelper_ReadEtcd(t *testing.T) {
	ep := os.Getenv(readerEnv)
	if ep == "" {
		t.Skip("runs only as the child of TestDaemon_EmbeddedEtcdRefusesOtherLocalUsers")
	}
	if c, err := net.Dial("unix", strings.TrimPrefix(ep, "unix://")); err != nil {
		fmt.Printf("connect: %v\n", err)
	} else {
		c.Close()
		fmt.Println("connect: ok")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	cli, err := store.Dial(ctx, []string{ep})
	if err != nil {
		fmt.Printf("read: %v\n", err)
		return
	}
	defer cli.Close()
	res, err := cli.Get(ctx, "/cairn/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		fmt.Printf("read: %v\n", err)
		return
	}
	fmt.Printf("read: %d keys\n", res.Count)
}

// TestDaemon_EmbeddedEtcdRefusesOtherLocalUsers runs a copy of this test
// binary as another user (nobody, 65534) that tries to read the server's
// etcd, and as root, which must succeed so that the test can tell a
// refusal from a broken child. The directories above the data dir are
// open to everyone, so only the data dir's and the socket's own modes keep
// the other user out.
func TestDaemon_EmbeddedEtcdRefusesOtherLocalUsers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a process as another user (uid 65534)")
	}
	base, err := os.MkdirTemp("", "cairn-lockdown-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "daemon.test")
	copyExecutable(t, bin)
	data := filepath.Join(base, "data")
	// With no umask the socket would be created open to everyone: only
	// the server's own choice of modes may keep the other user out. No
	// other test runs meanwhile (none of this package is parallel).
	umask := syscall.Umask(0)
	d := start(t, daemon.Options{DataDir: data})
	syscall.Umask(umask)

	read := func(t *testing.T, uid uint32) (connect, read string) {
		t.Helper()
		cmd := exec.Command(bin, "-test.run=^TestHelper_ReadEtcd$", "-test.count=1")
		cmd.Dir = base
		cmd.Env = append(os.Environ(), readerEnv+"="+d.EtcdEndpoint())
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child as uid %d: %v\n%s", uid, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(line, "connect: "); ok {
				connect = v
			}
			if v, ok := strings.CutPrefix(line, "read: "); ok {
				read = v
			}
		}
		if connect == "" || read == "" {
			t.Fatalf("child as uid %d did not report:\n%s", uid, out)
		}
		return connect, read
	}

	if c, r := read(t, 0); c != "ok" || !strings.HasSuffix(r, " keys") || r == "0 keys" {
		t.Fatalf("as root: connect %q, read %q; want both to work", c, r)
	}
	refused := func(t *testing.T) {
		t.Helper()
		c, r := read(t, 65534)
		if !strings.Contains(c, "permission denied") || strings.HasSuffix(r, " keys") {
			t.Fatalf("as nobody: connect %q, read %q; want both refused", c, r)
		}
	}
	t.Run("data dir as the server made it", refused)
	t.Run("socket alone, data dir opened to others", func(t *testing.T) {
		if err := os.Chmod(data, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(data, 0o700)
		refused(t)
	})
}

// copyExecutable copies this test binary to path, executable by everyone.
func copyExecutable(t *testing.T, path string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestServer_RestartsAfterSIGKILLLeftAStaleSocket kills a real `cairn
// server` process with SIGKILL, which leaves etcd's socket file behind, and
// starts another on the same data dir: it serves the API with the objects
// of the first.
func TestServer_RestartsAfterSIGKILLLeftAStaleSocket(t *testing.T) {
	bin := clitest.BuildCairn(t)
	home, data := t.TempDir(), filepath.Join(t.TempDir(), "data")
	run := func() *clitest.Proc {
		cmd := exec.Command(bin, append([]string{"server", "--listen", "127.0.0.1:0", "--data-dir", data}, clitest.RuntimeFlags(t, filepath.Join(filepath.Dir(data), "runtime"))...)...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		return clitest.Start(t, cmd)
	}
	connect := func(p *clitest.Proc) client.Interface {
		tok, err := os.ReadFile(filepath.Join(data, "admin.token"))
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.NewHTTP(client.Config{Server: p.URL, Token: strings.TrimSpace(string(tok)), CAFile: filepath.Join(data, daemon.CAFileName)})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx := context.Background()
	first := run()
	if _, err := connect(first).Create(ctx, testkit.Secret("default", "kept", password())); err != nil {
		t.Fatal(err)
	}
	first.Kill(t)
	if st, err := os.Stat(filepath.Join(data, embedded.SocketName)); err != nil || st.Mode().Type() != os.ModeSocket {
		t.Fatalf("no stale socket after SIGKILL (%v): the test exercises nothing", err)
	}

	second := run()
	if _, err := connect(second).Get(ctx, "Secret", "default", "kept"); err != nil {
		t.Fatalf("after a restart over a stale socket: %v", err)
	}
}

// TestDaemon_RefusesADataDirOrSecretFileOpenToOtherUsers starts servers
// whose data dir, encryption key or admin token other users may use: each
// is refused with an error naming the path, its mode and the command that
// fixes it, never the secret; after that command the server starts.
func TestDaemon_RefusesADataDirOrSecretFileOpenToOtherUsers(t *testing.T) {
	const tokenValue = "admin-token-that-must-stay-secret"
	keyValue := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	write := func(t *testing.T, path, content string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		// prepare sets up data dir dir and returns the options, the
		// refused path and its mode.
		prepare func(t *testing.T, dir string) (opts daemon.Options, path string, mode os.FileMode)
		wantErr error
		fix     string // the chmod argument the error must suggest
	}{
		{"data dir 0755", func(t *testing.T, dir string) (daemon.Options, string, os.FileMode) {
			return daemon.Options{DataDir: dir}, dir, 0o755
		}, daemon.ErrDataDirNotPrivate, "700"},
		{"data dir 0750", func(t *testing.T, dir string) (daemon.Options, string, os.FileMode) {
			return daemon.Options{DataDir: dir}, dir, 0o750
		}, daemon.ErrDataDirNotPrivate, "700"},
		{"encryption key 0644 in the data dir", func(t *testing.T, dir string) (daemon.Options, string, os.FileMode) {
			path := filepath.Join(dir, "encryption.key")
			write(t, path, keyValue, 0o644)
			return daemon.Options{DataDir: dir}, path, 0o644
		}, registry.ErrKeyFileNotPrivate, "600"},
		{"encryption key file 0660 given by flag", func(t *testing.T, dir string) (daemon.Options, string, os.FileMode) {
			path := filepath.Join(t.TempDir(), "shared.key")
			write(t, path, keyValue, 0o660)
			return daemon.Options{DataDir: dir, EncryptionKeyFile: path}, path, 0o660
		}, registry.ErrKeyFileNotPrivate, "600"},
		{"admin token 0644", func(t *testing.T, dir string) (daemon.Options, string, os.FileMode) {
			path := filepath.Join(dir, "admin.token")
			write(t, path, tokenValue, 0o644)
			return daemon.Options{DataDir: dir}, path, 0o644
		}, auth.ErrTokenFileNotPrivate, "600"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			opts, path, mode := tt.prepare(t, dir)
			if err := os.Chmod(path, mode); err != nil { // whatever the umask
				t.Fatal(err)
			}
			opts.Listen, opts.Logger = "127.0.0.1:0", quiet
			d, err := daemon.Start(context.Background(), opts)
			if err == nil {
				d.Stop()
				t.Fatal("the server started")
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
			msg := err.Error()
			for _, want := range []string{path, fmt.Sprintf("%04o", mode), "chmod " + tt.fix + " " + path} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			for _, secret := range []string{tokenValue, keyValue} {
				if strings.Contains(msg, secret) {
					t.Errorf("error %q shows a secret", msg)
				}
			}

			fixMode, _ := strconv.ParseUint(tt.fix, 8, 32)
			if err := os.Chmod(path, os.FileMode(fixMode)); err != nil {
				t.Fatal(err)
			}
			start(t, opts)
		})
	}
}

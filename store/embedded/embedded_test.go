package embedded_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/embedded"
)

// start runs an embedded etcd on dir, closed at test cleanup.
func start(t *testing.T, dir string) *embedded.Etcd {
	t.Helper()
	e, err := embedded.Start(dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// roundTrip writes key=value through a new client of endpoint and reads it
// back, failing the test when etcd does not answer.
func roundTrip(t *testing.T, endpoint, key, value string) {
	t.Helper()
	ctx := context.Background()
	cli, err := store.Dial(ctx, []string{endpoint})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if value != "" {
		if _, err := cli.Put(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	res, err := cli.Get(ctx, key)
	if err != nil || len(res.Kvs) != 1 || string(res.Kvs[0].Value) == "" {
		t.Fatalf("get %s: %+v %v", key, res, err)
	}
}

func TestStart_ServesClientsOnlyOnAPrivateUnixSocketInTheDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	before := testkit.ListeningTCP(t)
	e := start(t, dir)
	after := testkit.ListeningTCP(t)

	sock := filepath.Join(dir, embedded.SocketName)
	if e.Socket != sock || e.Endpoint != "unix://"+sock {
		t.Fatalf("socket %q, endpoint %q; want %s", e.Socket, e.Endpoint, sock)
	}
	roundTrip(t, e.Endpoint, "k", "v")
	st, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Type() != os.ModeSocket || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want a socket with mode 0600", st.Mode())
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("data dir mode %v (%v), want 0700", st.Mode().Perm(), err)
	}
	if ports := testkit.NewListeners(before, after); len(ports) != 0 {
		t.Fatalf("etcd listens on TCP ports %v", ports)
	}

	// The check sees a TCP listener when there is one.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ports := testkit.NewListeners(after, testkit.ListeningTCP(t))
	if want := l.Addr().(*net.TCPAddr).Port; len(ports) != 1 || ports[0] != want {
		t.Fatalf("the check found listeners %v, want [%d]", ports, want)
	}
}

func TestStart_ReplacesASocketLeftByAKilledProcessAndKeepsTheData(t *testing.T) {
	dir := t.TempDir()
	e, err := embedded.Start(dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, e.Endpoint, "kept", "v")
	e.Close()

	// A process killed with SIGKILL leaves its socket file behind, with
	// nobody accepting on it.
	sock := filepath.Join(dir, embedded.SocketName)
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("no stale socket to test with: %v", err)
	}

	e2 := start(t, dir)
	roundTrip(t, e2.Endpoint, "kept", "")
}

func TestStart_SecondEtcdOnTheSameDataDirIsRefusedAndTheFirstKeepsItsSocket(t *testing.T) {
	dir := t.TempDir()
	e := start(t, dir)
	_, err := embedded.Start(dir, embedded.Options{})
	if !errors.Is(err, embedded.ErrDataDirInUse) {
		t.Fatalf("second start: %v, want ErrDataDirInUse", err)
	}
	// A new connection still reaches the first etcd.
	roundTrip(t, e.Endpoint, "k", "v")
}

func TestStart_DataDirTooLongForASocketIsAClearError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 110))
	_, err := embedded.Start(dir, embedded.Options{})
	if !errors.Is(err, embedded.ErrSocketPathTooLong) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("got %v, want ErrSocketPathTooLong naming %s", err, dir)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused data dir was created (%v)", err)
	}
}

func TestClose_RemovesTheSocketAndFreesTheDataDir(t *testing.T) {
	dir := t.TempDir()
	e, err := embedded.Start(dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if _, err := os.Stat(e.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket after Close: %v, want it removed", err)
	}
	roundTrip(t, start(t, dir).Endpoint, "k", "v")
}

func TestStart_DataDirWhoseNameNeedsURLEscapingIsReachable(t *testing.T) {
	for _, name := range []string{"with space", "100%", "100%zz", "a#b", "a?b", "a:b", "ü"} {
		t.Run(name, func(t *testing.T) {
			e := start(t, filepath.Join(t.TempDir(), name))
			roundTrip(t, e.Endpoint, "k", "v")
		})
	}
}

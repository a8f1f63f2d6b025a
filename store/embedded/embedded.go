// Package embedded runs a single-node etcd inside the cairn process, under
// a data directory. Only the server process needs it: clients never import
// it, so they do not link etcd's server.
//
// The embedded etcd has no TCP listener at all: clients reach it through a
// unix socket inside the data directory (mode 0600, in a directory that is
// itself 0700), so only the user running cairn can connect; a single node
// needs no peer listener and gets none, and no metrics listener is opened.
package embedded

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"cairn.dev/cairn/store"
)

// SocketName is the name of the client socket inside the data dir.
const SocketName = "etcd.sock"

// lockName is the name of the file whose lock marks the data dir in use.
const lockName = "etcd.lock"

// lockWait is how long Start waits for the data dir's lock before it
// reports the dir in use: a server killed while it was starting a
// process leaves that half-started child holding the lock (a copy of
// the server's descriptor, until the child's exec closes it) for a
// moment after the server is gone, so that a restart right away found
// the dir "in use" though no server ran (seen in the soak, bench/soak*).
// A live server holds the lock for good and is still refused.
const lockWait = 3 * time.Second

// peerURL is the peer URL the single member advertises. Nothing listens
// there (port 0 cannot be dialed): a single node never talks to a peer,
// and the URL only names the member in its cluster. Data dirs written
// before the peer listener was dropped recorded this same URL.
const peerURL = "http://127.0.0.1:0"

var (
	// ErrDataDirInUse is returned by Start when another process (or
	// another Etcd in this one) runs etcd on the same data dir.
	ErrDataDirInUse = errors.New("embedded: the data dir is in use by another cairn server")
	// ErrSocketPathTooLong is returned by Start when the client socket's
	// path inside the data dir exceeds what a unix socket address holds.
	ErrSocketPathTooLong = errors.New("embedded: the data dir's path is too long for a unix socket")
)

// Etcd is a single-node etcd running inside the cairn process.
type Etcd struct {
	etcd *embed.Etcd
	lock *os.File
	// Endpoint is the client endpoint to give store.Dial: "unix://"
	// followed by the absolute path of the socket, URL-escaped.
	Endpoint string
	// Socket is the absolute path of the client socket.
	Socket string
}

// Options configures Start.
type Options struct {
	// StartTimeout bounds the wait for etcd to be ready; default 60s.
	StartTimeout time.Duration
	// MaxTxnOps is the most conditions, and the most writes, etcd accepts
	// in one transaction (--max-txn-ops); default etcd's own, 128. The
	// registry over it must be given the same number
	// (registry.Options.MaxTxnOps).
	MaxTxnOps int
	// Quota is etcd's backend quota in bytes (its --quota-backend-bytes):
	// past it etcd raises its NOSPACE alarm and refuses every write that
	// stores data; default store.DefaultQuota.
	Quota int64
}

// Start runs etcd with its data under dir (created with mode 0700 when
// missing) and blocks until it serves clients on dir/etcd.sock or
// opts.StartTimeout passes. Restarting on the same dir keeps every key; a
// socket left behind by a process that was killed is replaced. It fails
// with ErrDataDirInUse while another Etcd runs on dir, and with
// ErrSocketPathTooLong when the socket's path is too long.
func Start(dir string, opts Options) (*Etcd, error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("embedded: data dir %s: %w", dir, err)
	}
	sock := filepath.Join(abs, SocketName)
	if limit := len(syscall.RawSockaddrUnix{}.Path) - 1; len(sock) > limit {
		return nil, fmt.Errorf("%w: the socket %s would be %d bytes, at most %d are possible: choose a data dir with a shorter path than %s",
			ErrSocketPathTooLong, sock, len(sock), limit, abs)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("embedded: data dir: %w", err)
	}
	lock, err := lockDir(abs, lockWait)
	if err != nil {
		return nil, err
	}
	e, err := startEtcd(abs, sock, opts)
	if err != nil {
		lock.Close()
		return nil, err
	}
	// The endpoint is a URL: its path is escaped, so that a data dir whose
	// name holds '%', '#' or '?' still names the socket.
	ep := "unix://" + (&url.URL{Path: sock}).EscapedPath()
	return &Etcd{etcd: e, lock: lock, Endpoint: ep, Socket: sock}, nil
}

// lockDir takes an exclusive lock on dir's lock file, held until the file
// is closed (or the process dies). etcd replaces any file at the socket's
// path before it locks its own data, so without this lock a second server
// started on the same dir would take the socket away from the first. It
// blocks while another holds the lock, at most wait (see lockWait).
// Errors: ErrDataDirInUse when the lock is still held after wait.
func lockDir(dir string, wait time.Duration) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded: lock the data dir: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return f, nil
		case !errors.Is(err, syscall.EWOULDBLOCK):
			f.Close()
			return nil, fmt.Errorf("embedded: lock the data dir: %w", err)
		case time.Now().After(deadline):
			f.Close()
			return nil, fmt.Errorf("%w: another process holds the lock on %s", ErrDataDirInUse, path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func startEtcd(dir, sock string, opts Options) (*embed.Etcd, error) {
	curl := url.URL{Scheme: "unix", Path: sock}
	purl, _ := url.Parse(peerURL)
	cfg := embed.NewConfig()
	cfg.Name = "cairn"
	cfg.Dir = filepath.Join(dir, "etcd")
	cfg.ListenClientUrls = []url.URL{curl}
	cfg.AdvertiseClientUrls = []url.URL{curl}
	cfg.ListenClientHttpUrls = nil
	cfg.ListenPeerUrls = nil
	cfg.AdvertisePeerUrls = []url.URL{*purl}
	cfg.InitialCluster = cfg.Name + "=" + purl.String()
	cfg.ListenMetricsUrls = nil
	// cairn speaks gRPC only; the JSON gateway would be one more way in
	// (and it cannot dial a socket whose path holds a '%').
	cfg.EnableGRPCGateway = false
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	setLimits(cfg, opts)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("embedded: start embedded etcd in %s: %w", cfg.Dir, err)
	}
	// The data dir already keeps other users out; the socket's own mode
	// does too, whatever the umask.
	if err := os.Chmod(sock, 0o600); err != nil {
		e.Close()
		return nil, fmt.Errorf("embedded: restrict the etcd socket: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded: embedded etcd: %w", err)
	case <-time.After(opts.StartTimeout):
		e.Server.Stop()
		e.Close()
		return nil, errors.New("embedded: embedded etcd did not become ready in time")
	}
	return e, nil
}

// Err reports a fatal error of the running etcd.
func (e *Etcd) Err() <-chan error { return e.etcd.Err() }

// Close stops etcd gracefully, flushing its data, removes its socket and
// releases the data dir.
func (e *Etcd) Close() {
	e.etcd.Close()
	e.lock.Close()
}

// setLimits sets the sizes etcd accepts: its quota, the largest request
// (store.MaxRequestBytes, which the store's client and Txn agree with) and
// the most operations in one transaction.
func setLimits(cfg *embed.Config, opts Options) {
	cfg.QuotaBackendBytes = opts.Quota
	if cfg.QuotaBackendBytes <= 0 {
		cfg.QuotaBackendBytes = store.DefaultQuota
	}
	cfg.MaxRequestBytes = store.MaxRequestBytes
	if opts.MaxTxnOps > 0 {
		cfg.MaxTxnOps = uint(opts.MaxTxnOps)
	}
}

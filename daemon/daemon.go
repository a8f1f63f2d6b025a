// Package daemon assembles one cairn server process: the store (embedded
// etcd under the data dir, or an external etcd cluster), the registry, the
// authenticator, the HTTP API, the compactor (in one elected server) and,
// when asked, a controller manager whose controllers run while this process
// leads them (among every server and controller-manager sharing the API). `cairn server` is a thin wrapper around it,
// and tests start whole servers with it. Its sibling StartControllerManager
// assembles the other process, `cairn controller-manager`: the controllers
// alone, against an API server over HTTP(S).
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/event"
	"cairn.dev/cairn/gateway"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/privfile"
	"cairn.dev/cairn/lease"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/runtime"
	rtlocal "cairn.dev/cairn/runtime/local"
	"cairn.dev/cairn/server"
	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/embedded"
)

// The default namespace limits (Options.NamespaceMaxObjects and
// NamespaceMaxBytes when 0).
const (
	DefaultNamespaceMaxObjects = registry.DefaultNamespaceMaxObjects
	DefaultNamespaceMaxBytes   = registry.DefaultNamespaceMaxBytes
)

// DefaultMaxTxnOps and MinTxnOps are the default and the least
// Options.MaxTxnOps (registry.DefaultMaxTxnOps, registry.MinTxnOps).
const (
	DefaultMaxTxnOps = registry.DefaultMaxTxnOps
	MinTxnOps        = registry.MinTxnOps
)

// Options configures a server process. The zero value of every field but
// DataDir has a sensible default.
type Options struct {
	// Listen is the HTTPS (or HTTP) address; default 127.0.0.1:7070.
	Listen string
	// TLSCertFile and TLSKeyFile are the user's own serving certificate
	// and key (PEM); unset, the server issues its own from the CA the
	// servers of its store share (tls.go).
	TLSCertFile string
	TLSKeyFile  string
	// InsecureHTTP serves plain HTTP: an explicit opt-out of TLS (kubectl
	// and client-go then send no token).
	InsecureHTTP bool
	// AdvertiseURL is the URL other processes reach this server at, stored
	// as its identity in leader elections (API servers forward trace
	// requests to the controllers' leader there); default the URL of the
	// listener, which is right on one machine only when Listen names a
	// wildcard address.
	AdvertiseURL string
	// DataDir holds the embedded etcd (its data, and etcd.sock, the only
	// way to reach it), admin.token and encryption.key. It is created with
	// mode 0700; an existing one must give group and others no access.
	DataDir string
	// EtcdEndpoints selects an external etcd cluster instead of the
	// embedded one.
	EtcdEndpoints []string
	// EncryptionKeyFile holds the secret-encryption key (base64 of 32
	// bytes); default <DataDir>/encryption.key, created when missing. Every
	// server sharing one etcd needs the same key.
	EncryptionKeyFile string
	// ClientConfigPath, when set, is where a client config (server URL and
	// admin token) is written if none exists there yet.
	ClientConfigPath string
	// Controllers are the controllers this server runs while it leads them
	// (see package controllers for the list); none makes a pure API server.
	Controllers []manager.Controller
	// RuntimeDir is where the local runtime keeps the commands the
	// controllers run (container deploy items, event workers and jobs):
	// their workspaces, state and logs. Only used with Controllers.
	// Default: rtlocal.DefaultRoot when units run as users of their own
	// (they must pass through every directory above their workspaces,
	// which the data dir, 0700, forbids), <DataDir>/runtime otherwise.
	RuntimeDir string
	// RuntimeIsolation says whom those commands run as (rtlocal.Isolation):
	// by default each as a uid of its own, which needs root; the server
	// refuses to start otherwise, unless RuntimeIsolation.None opts out.
	RuntimeIsolation rtlocal.Isolation
	// Runtime, when set, is where the controllers run units instead of
	// the local runtime (RuntimeDir and RuntimeIsolation are then unused);
	// the daemon closes it when it stops.
	Runtime runtime.Closer
	// CompactionInterval: the leader compacts history older than this
	// interval, every interval; default 5m.
	CompactionInterval time.Duration
	// BookmarkInterval: how often watches get a BOOKMARK; default 30s.
	BookmarkInterval time.Duration
	// LeaderTTL: how long a dead leader blocks failover; default 5s.
	LeaderTTL time.Duration
	// StoreTimeout bounds the store's part of every API request
	// (server.Options.StoreTimeout) and how long a watch may hear nothing
	// from etcd (registry.Options.StoreTimeout); default
	// DefaultStoreTimeout (5s).
	StoreTimeout time.Duration
	// BodyReadTimeout bounds how long reading a request body may take
	// (server.Options.BodyReadTimeout); 0 takes the server's default.
	BodyReadTimeout time.Duration
	// NamespaceMaxObjects and NamespaceMaxBytes limit a namespace whose
	// spec.limits leaves them unset (registry.Options): 0 for the
	// registry's defaults, negative for no limit.
	NamespaceMaxObjects int64
	NamespaceMaxBytes   int64
	// MaxTxnOps is the most conditions, and the most writes, of one etcd
	// transaction: the embedded etcd is started with it, and the registry
	// refuses (422) a write that would need more. With EtcdEndpoints it
	// must not exceed the cluster's --max-txn-ops. Default 128, etcd's
	// default; at least registry.MinTxnOps.
	MaxTxnOps int
	// Logger; default slog.Default().
	Logger *slog.Logger
	// StoreQuota is the embedded etcd's space quota in bytes; default
	// store.DefaultQuota (2 GiB), at least store.MinQuota. With an
	// external etcd the quota the cluster reports is used, this one only
	// when it reports none (etcd before 3.6).
	StoreQuota int64
	// MaxObjectBytes bounds an object's stored encoding; default
	// registry.DefaultMaxObjectBytes.
	MaxObjectBytes int64
	// SpaceCheckInterval is how often the store's space is checked (and a
	// full store recovered); default store.DefaultSpaceInterval.
	SpaceCheckInterval time.Duration

	// Memory per request, as in server.Options: the caps on requests in
	// flight and on open watches (429 beyond), and the write timeout for
	// clients that stop reading. 0: the defaults below; negative: none.
	MaxRequestsInflight int
	MaxWatches          int
	WriteTimeout        time.Duration
}

// DefaultStoreTimeout is the default of Options.StoreTimeout.
const DefaultStoreTimeout = server.DefaultStoreTimeout

// Defaults of the limits of Options (the server's).
const (
	DefaultMaxRequestsInflight = server.DefaultMaxRequestsInflight
	DefaultMaxWatches          = server.DefaultMaxWatches
	DefaultWriteTimeout        = server.DefaultWriteTimeout
)

// Daemon is a running server process.
type Daemon struct {
	opts     Options
	log      *slog.Logger
	embedded *embedded.Etcd
	etcd     *clientv3.Client
	store    *store.Store
	space    *store.SpaceMonitor
	registry *registry.Registry
	auth     *auth.Authenticator
	http     *server.Server
	metrics  *prometheus.Registry
	manager  *manager.Manager // nil without controllers
	runtime  runtime.Closer   // nil without controllers
	system   client.Interface // in-process client acting as the system
	listener net.Listener
	token    string
	caPEM    []byte // the CA's certificate (tls.go); nil without one
	caFile   string // where it is written, for CAIRN_CA_FILE

	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
	done   chan struct{}
}

// Start brings a server up and returns once it serves HTTP. It fails when
// the data dir cannot be used (ErrDataDirNotPrivate when other users have
// access to it), the encryption key or admin token file is open to other
// users (registry.ErrKeyFileNotPrivate, auth.ErrTokenFileNotPrivate), etcd
// cannot be started or reached, the encryption key does not match the
// store's, or the address is taken. Stop ends it.
func Start(ctx context.Context, opts Options) (*Daemon, error) {
	d, err := start(ctx, opts)
	if err != nil {
		if d != nil {
			d.closeStore()
		}
		return nil, err
	}
	return d, nil
}

// start assembles the server in the order its parts depend on each other:
// the store, the registry over it, authentication, the listener and its
// TLS, the controllers (with the runtime they run commands in), the HTTP
// API; then it runs them (serve). On failure it returns the daemon built
// so far, whose store Start closes.
func start(ctx context.Context, opts Options) (*Daemon, error) {
	opts = withDefaults(opts)
	if err := validate(opts); err != nil {
		return nil, err
	}
	d := &Daemon{opts: opts, log: opts.Logger, done: make(chan struct{})}
	if err := prepareDataDir(opts.DataDir); err != nil {
		return nil, err
	}
	endpoints, err := d.openStore(ctx)
	if err != nil {
		return d, err
	}
	events := event.New(event.Options{Logger: d.log})
	if err := d.openRegistry(ctx, events); err != nil {
		return d, err
	}
	if err := d.openAuth(ctx, events); err != nil {
		return d, err
	}
	d.metrics = prometheus.NewRegistry()
	d.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	d.metrics.MustRegister(spaceMetrics(d.store)...)
	d.system = local.New(d.registry, identity.System())
	if d.listener, err = net.Listen("tcp", opts.Listen); err != nil {
		return d, fmt.Errorf("daemon: listen on %s: %w", opts.Listen, err)
	}
	serveTLS, peer, err := d.setupTLS(ctx)
	if err != nil {
		d.listener.Close()
		return d, err
	}
	if err := d.newManager(); err != nil {
		return d, err
	}
	bindEvents(events, d.registry, d.runtime)
	webhooks, err := gateway.New(gateway.Options{Events: events, Logger: d.log, Metrics: d.metrics})
	if err != nil {
		return d, err
	}
	webhooks.Bind(d.registry)
	d.http, err = server.New(server.Options{Registry: d.registry, Auth: d.auth, Metrics: d.metrics, Logger: d.log, Webhooks: webhooks,
		Traces: traceSource{d}, Dependents: dependentsSource{d}, BodyReadTimeout: opts.BodyReadTimeout, StoreTimeout: opts.StoreTimeout, TLS: serveTLS, Peer: peer,
		MaxRequestsInflight: opts.MaxRequestsInflight, MaxWatches: opts.MaxWatches, WriteTimeout: opts.WriteTimeout, Ready: d.runtimeReady})
	if err != nil {
		return d, err
	}
	events.Logs().SetForwarder(d.http) // logs held by the controllers' leader
	d.writeConfigs()
	d.serve()
	d.log.Info("cairn server ready", "url", d.URL(), "dataDir", opts.DataDir, "etcd", endpoints, "controllers", len(opts.Controllers))
	return d, nil
}

func withDefaults(o Options) Options {
	if o.Listen == "" {
		o.Listen = "127.0.0.1:7070"
	}
	if o.CompactionInterval == 0 {
		o.CompactionInterval = 5 * time.Minute
	}
	if o.BookmarkInterval == 0 {
		o.BookmarkInterval = 30 * time.Second
	}
	if o.LeaderTTL == 0 {
		o.LeaderTTL = 5 * time.Second
	}
	if o.StoreTimeout == 0 {
		o.StoreTimeout = DefaultStoreTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.StoreQuota == 0 {
		o.StoreQuota = store.DefaultQuota
	}
	return o
}

// validate rejects settings that cannot work, naming the option.
func validate(o Options) error {
	for name, d := range map[string]time.Duration{"compaction interval": o.CompactionInterval,
		"bookmark interval": o.BookmarkInterval, "leader TTL": o.LeaderTTL, "store timeout": o.StoreTimeout} {
		if d <= 0 {
			return fmt.Errorf("daemon: the %s must be positive, got %s", name, d)
		}
	}
	if o.LeaderTTL < time.Second {
		return fmt.Errorf("daemon: the leader TTL must be at least 1s (etcd leases count whole seconds), got %s", o.LeaderTTL)
	}
	if o.DataDir == "" {
		return fmt.Errorf("daemon: a data dir is required")
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return fmt.Errorf("daemon: give both a TLS certificate file and its private key file, or neither")
	}
	if o.InsecureHTTP && o.TLSCertFile != "" {
		return fmt.Errorf("daemon: a TLS certificate was given, but plain HTTP was asked for: choose one")
	}
	if o.StoreQuota < store.MinQuota {
		return fmt.Errorf("daemon: the store quota must be at least %s, got %d bytes", store.FormatBytes(store.MinQuota), o.StoreQuota)
	}
	if o.AdvertiseURL != "" {
		if u, err := url.Parse(o.AdvertiseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("daemon: the advertised URL %q is not an http(s)://host[:port] URL", o.AdvertiseURL)
		}
	}
	return nil
}

// ErrDataDirNotPrivate is returned by Start for an existing data dir that
// users other than its owner may enter, list or write.
var ErrDataDirNotPrivate = errors.New("daemon: the data dir is open to other users")

// prepareDataDir creates the data dir with mode 0700, or checks that an
// existing one is a directory that group and others have no permission on:
// it holds the admin token, the encryption key and etcd's socket and data.
func prepareDataDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("daemon: data dir: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("daemon: data dir: %w", err)
	case !st.IsDir():
		return fmt.Errorf("daemon: data dir %s is not a directory", dir)
	}
	if !privfile.Private(st.Mode()) {
		return fmt.Errorf("%w: %s has mode %04o, so other users can reach the admin token, the encryption key and the store: run 'chmod 700 %s'",
			ErrDataDirNotPrivate, dir, st.Mode().Perm(), dir)
	}
	return nil
}

// spawn runs f until the daemon stops; the first error ends the daemon.
func (d *Daemon) spawn(f func() error) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := f(); err != nil {
			d.mu.Lock()
			if d.err == nil {
				d.err = err
			}
			d.mu.Unlock()
			d.cancel()
		}
	}()
}

// URL is the base URL clients reach the server at: https://host:port, or
// http:// with Options.InsecureHTTP.
func (d *Daemon) URL() string {
	if d.opts.InsecureHTTP {
		return "http://" + d.listener.Addr().String()
	}
	return "https://" + d.listener.Addr().String()
}

// advertised is the URL other processes reach this server at.
func (d *Daemon) advertised() string {
	if d.opts.AdvertiseURL != "" {
		return strings.TrimSuffix(d.opts.AdvertiseURL, "/")
	}
	return d.URL()
}

// Token is the admin token of this server's data dir.
func (d *Daemon) Token() string { return d.token }

// Client is an in-process API client acting as the system (an admin).
func (d *Daemon) Client() client.Interface { return d.system }

// Manager is the controller manager, nil for a pure API server.
func (d *Daemon) Manager() *manager.Manager { return d.manager }

// Registry gives in-process access to the API.
func (d *Daemon) Registry() *registry.Registry { return d.registry }

// Metrics is the registry /metrics serves.
func (d *Daemon) Metrics() *prometheus.Registry { return d.metrics }

// Store is the daemon's store.
func (d *Daemon) Store() *store.Store { return d.store }

// Space is the store's space monitor, which every server runs.
func (d *Daemon) Space() *store.SpaceMonitor { return d.space }

// EtcdEndpoint is the client endpoint of the embedded etcd, "unix://"
// followed by the path of its socket in the data dir ("" when external).
func (d *Daemon) EtcdEndpoint() string {
	if d.embedded == nil {
		return ""
	}
	return d.embedded.Endpoint
}

// Stop shuts the server down gracefully: in-flight requests drain, watches
// end, the leader resigns, and etcd (if embedded) closes its data cleanly.
// It returns the first error the daemon failed with, if any.
func (d *Daemon) Stop() error {
	d.cancel()
	return d.Wait()
}

// Wait blocks until the daemon has stopped and returns why.
func (d *Daemon) Wait() error {
	<-d.done
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// Done is closed once the daemon has stopped.
func (d *Daemon) Done() <-chan struct{} { return d.done }

func (d *Daemon) closeStore() {
	if d.runtime != nil {
		d.runtime.Close()
	}
	if d.registry != nil {
		d.registry.Close()
	}
	if d.etcd != nil {
		d.etcd.Close()
	}
	if d.embedded != nil {
		d.embedded.Close()
	}
}

// writeClientConfig writes the client config unless one exists that points
// at another server. A config for this same URL gets the current token and
// CA.
func (d *Daemon) writeClientConfig() error {
	path := d.opts.ClientConfigPath
	if path == "" || d.token == "" { // no admin token on a full store
		return nil
	}
	cur, err := client.LoadConfig(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case cur.Server != d.URL() || (cur.Token == d.token && cur.CertificateAuthorityData == string(d.caPEM)):
		return nil
	}
	return client.WriteConfig(path, d.ClientConfig())
}

// traceSource serves the traces of this server's controllers while it
// leads them, and names the leader otherwise.
type traceSource struct{ d *Daemon }

func (t traceSource) Trace(kind, ns, name string) (*api.Trace, bool) {
	m := t.d.manager
	if m == nil || !m.Leading() {
		return nil, false
	}
	tr, _ := m.Traces().Get(kind, ns, name)
	return tr, true
}

func (t traceSource) Leader(ctx context.Context) (string, error) {
	return lease.Current(ctx, t.d.system, manager.LeaseName)
}

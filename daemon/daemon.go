// Package daemon assembles one cairn server process: the store (embedded
// etcd under the data dir, or an external etcd cluster), the registry, the
// authenticator, the HTTP API and, in the elected leader only, the
// controllers and the compactor. `cairn server` is a thin wrapper around it,
// and tests start whole servers with it.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/leader"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/server"
	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/embedded"
)

// Options configures a server process. The zero value of every field but
// DataDir has a sensible default.
type Options struct {
	// Listen is the HTTP address; default 127.0.0.1:7070.
	Listen string
	// DataDir holds the embedded etcd, admin.token and encryption.key.
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
	// Controllers runs the controllers (in the elected leader only); false
	// makes a pure API server.
	Controllers bool
	// CompactionInterval: the leader compacts history older than this
	// interval, every interval; default 5m.
	CompactionInterval time.Duration
	// BookmarkInterval: how often watches get a BOOKMARK; default 30s.
	BookmarkInterval time.Duration
	// LeaderTTL: how long a dead leader blocks failover; default 5s.
	LeaderTTL time.Duration
	// GCWorkers: concurrent garbage-collector workers; default 8.
	GCWorkers int
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Daemon is a running server process.
type Daemon struct {
	opts     Options
	log      *slog.Logger
	embedded *embedded.Etcd
	etcd     *clientv3.Client
	store    *store.Store
	registry *registry.Registry
	auth     *auth.Authenticator
	http     *server.Server
	metrics  *prometheus.Registry
	leading  prometheus.Gauge
	listener net.Listener
	token    string

	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
	done   chan struct{}
}

// Start brings a server up and returns once it serves HTTP. It fails when
// the data dir cannot be used, etcd cannot be started or reached, the
// encryption key does not match the store's, or the address is taken. Stop
// ends it.
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

func start(ctx context.Context, opts Options) (*Daemon, error) {
	opts = withDefaults(opts)
	if err := validate(opts); err != nil {
		return nil, err
	}
	d := &Daemon{opts: opts, log: opts.Logger, done: make(chan struct{})}
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("daemon: data dir: %w", err)
	}
	endpoints := opts.EtcdEndpoints
	if len(endpoints) == 0 {
		e, err := embedded.Start(opts.DataDir, embedded.Options{})
		if err != nil {
			return nil, err
		}
		d.embedded = e
		endpoints = []string{e.Endpoint}
	}
	cli, err := store.Dial(ctx, endpoints)
	if err != nil {
		return d, err
	}
	d.etcd, d.store = cli, store.New(cli)
	keyFile := opts.EncryptionKeyFile
	if keyFile == "" {
		keyFile = filepath.Join(opts.DataDir, "encryption.key")
	}
	enc, err := registry.LoadOrCreateKey(keyFile)
	if err != nil {
		return d, err
	}
	d.registry, err = registry.New(d.store, registry.Options{Kinds: kinds.All(), Encryption: enc,
		BookmarkInterval: opts.BookmarkInterval, Logger: d.log})
	if err != nil {
		return d, err
	}
	if err := d.registry.Init(ctx); err != nil {
		return d, fmt.Errorf("daemon: initialize the store: %w", err)
	}
	d.auth = auth.New(d.store)
	if d.token, err = d.auth.EnsureAdminToken(ctx, filepath.Join(opts.DataDir, "admin.token")); err != nil {
		return d, err
	}
	d.metrics = prometheus.NewRegistry()
	d.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	d.leading = prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_leader",
		Help: "1 while this server is the elected leader running the controllers."})
	d.metrics.MustRegister(d.leading)
	d.http, err = server.New(server.Options{Registry: d.registry, Auth: d.auth, Metrics: d.metrics, Logger: d.log})
	if err != nil {
		return d, err
	}
	if d.listener, err = net.Listen("tcp", opts.Listen); err != nil {
		return d, fmt.Errorf("daemon: listen on %s: %w", opts.Listen, err)
	}
	if err := d.writeClientConfig(); err != nil {
		d.log.Warn("could not write the client config", "path", opts.ClientConfigPath, "err", err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	d.spawn(func() error { return d.http.Serve(rctx, d.listener) })
	// Compaction runs in one server at a time, whether or not it runs the
	// controllers: pure API servers must not let history grow forever.
	d.spawn(func() error {
		return leader.Run(rctx, d.etcd, leader.Options{Name: "compactor", Identity: d.URL(),
			TTL: opts.LeaderTTL, Logger: d.log}, func(ctx context.Context) {
			d.store.RunCompactor(ctx, opts.CompactionInterval, d.log)
		})
	})
	if opts.Controllers {
		d.spawn(func() error {
			return leader.Run(rctx, d.etcd, leader.Options{Name: "controllers", Identity: d.URL(),
				TTL: opts.LeaderTTL, Logger: d.log}, d.lead)
		})
	}
	if d.embedded != nil {
		d.spawn(func() error {
			select {
			case err := <-d.embedded.Err():
				return fmt.Errorf("daemon: embedded etcd failed: %w", err)
			case <-rctx.Done():
				return nil
			}
		})
	}
	go func() {
		d.wg.Wait()
		d.closeStore()
		close(d.done)
	}()
	d.log.Info("cairn server ready", "url", d.URL(), "dataDir", opts.DataDir, "etcd", endpoints, "controllers", opts.Controllers)
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
	if o.GCWorkers == 0 {
		o.GCWorkers = 8
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// validate rejects settings that cannot work, naming the option.
func validate(o Options) error {
	for name, d := range map[string]time.Duration{"compaction interval": o.CompactionInterval,
		"bookmark interval": o.BookmarkInterval, "leader TTL": o.LeaderTTL} {
		if d <= 0 {
			return fmt.Errorf("daemon: the %s must be positive, got %s", name, d)
		}
	}
	if o.LeaderTTL < time.Second {
		return fmt.Errorf("daemon: the leader TTL must be at least 1s (etcd leases count whole seconds), got %s", o.LeaderTTL)
	}
	if o.GCWorkers < 0 {
		return fmt.Errorf("daemon: the number of gc workers must not be negative, got %d", o.GCWorkers)
	}
	if o.DataDir == "" {
		return fmt.Errorf("daemon: a data dir is required")
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

// lead runs the controllers while this process is the elected leader,
// until leadership ends.
func (d *Daemon) lead(ctx context.Context) {
	d.leading.Set(1)
	defer d.leading.Set(0)
	var wg sync.WaitGroup
	run := func(name string, f func(ctx context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx); err != nil && ctx.Err() == nil {
				d.log.Error("controller stopped", "controller", name, "err", err)
			}
		}()
	}
	for name, c := range d.controllers(client.NewLocal(d.registry)) {
		run(name, c)
	}
	wg.Wait()
}

// URL is the base URL clients reach the server at.
func (d *Daemon) URL() string { return "http://" + d.listener.Addr().String() }

// Token is the admin token of this server's data dir.
func (d *Daemon) Token() string { return d.token }

// Registry gives in-process access to the API.
func (d *Daemon) Registry() *registry.Registry { return d.registry }

// Metrics is the registry /metrics serves.
func (d *Daemon) Metrics() *prometheus.Registry { return d.metrics }

// Store is the daemon's store.
func (d *Daemon) Store() *store.Store { return d.store }

// EtcdEndpoint is the client URL of the embedded etcd ("" when external).
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
// at another server. A config for this same URL gets the current token.
func (d *Daemon) writeClientConfig() error {
	path := d.opts.ClientConfigPath
	if path == "" {
		return nil
	}
	cur, err := client.LoadConfig(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case cur.Server != d.URL() || cur.Token == d.token:
		return nil
	}
	return client.WriteConfig(path, client.Config{Server: d.URL(), Token: d.token})
}

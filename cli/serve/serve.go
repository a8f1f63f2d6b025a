// Package serve is the `cairn server` command: it runs the API server with
// an embedded etcd (or an external etcd cluster) and, in the elected leader,
// the controllers, until SIGINT or SIGTERM.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/gopace"
	rtkube "cairn.dev/cairn/runtime/kubernetes"
	rtlocal "cairn.dev/cairn/runtime/local"
)

type flags struct {
	listen             string
	tlsCertFile        string
	tlsKeyFile         string
	insecureHTTP       bool
	advertiseURL       string
	dataDir            string
	etcdEndpoints      []string
	encryptionKeyFile  string
	ctrl               controllers.Flags
	compactionInterval time.Duration
	bookmarkInterval   time.Duration
	logLevel           string
	writeConfig        bool

	// Request hygiene.
	requestBodyTimeout time.Duration
	storeTimeout       time.Duration
	// namespace limits (limits.go)
	nsMaxObjects int64
	nsMaxBytes   string
	// linear: the store's transaction limit.
	etcdMaxTxnOps int
	storeQuota    string
	memory        memoryFlags

	// The local runtime of the commands the controllers run.
	runtimeDir       string
	runtimeIsolation rtlocal.IsolationFlags
	runtimeSelect    rtkube.Flags
}

// memoryFlags bound the memory of requests (daemon.Options, as the server's).
type memoryFlags struct {
	maxRequestsInflight int
	maxWatches          int
	writeTimeout        time.Duration
}

func (m *memoryFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.IntVar(&m.maxRequestsInflight, "max-requests-inflight", daemon.DefaultMaxRequestsInflight,
		"API requests served at once, watches apart; more are refused with 429 TooManyRequests (0: no limit)")
	fs.IntVar(&m.maxWatches, "max-watches", daemon.DefaultMaxWatches,
		"watches (and other long-running requests, such as followed logs) open at once; more are refused with 429 (0: no limit)")
	fs.DurationVar(&m.writeTimeout, "write-timeout", daemon.DefaultWriteTimeout,
		"how long one write of a response may wait for a client that does not read before its connection is closed (0: no limit)")
}

// apply sets the limits in opts; a flag's 0 (no limit) is the daemon's
// negative.
func (m *memoryFlags) apply(opts *daemon.Options) error {
	if m.maxRequestsInflight < 0 || m.maxWatches < 0 || m.writeTimeout < 0 {
		return fmt.Errorf("--max-requests-inflight, --max-watches and --write-timeout must not be negative")
	}
	opts.MaxRequestsInflight, opts.MaxWatches = noLimitIfZero(m.maxRequestsInflight), noLimitIfZero(m.maxWatches)
	opts.WriteTimeout = noLimitIfZero(m.writeTimeout)
	return nil
}

// New returns the `cairn server` command.
func New() *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the cairn API server and controllers",
		Long: `Run the cairn API server. By default it keeps its data in an embedded etcd
under --data-dir; --etcd-endpoints uses an external etcd cluster instead, so
several servers can share it (controllers then run in one elected leader).

It serves HTTPS with a certificate issued by a certificate authority the
servers of one store share (created by the first); --tls-cert-file and
--tls-private-key-file serve your own certificate instead, and
--insecure-http serves plain HTTP.

On first start it writes an admin token to <data-dir>/admin.token, a client
config (server URL, token and CA) to ~/.cairn/config, which the other cairn
commands read, and a kubeconfig (~/.cairn/kubeconfig, context "cairn") for
kubectl and client-go: KUBECONFIG=~/.cairn/kubeconfig kubectl get secrets.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfgPath := client.DefaultConfigPath()
			if fl := cmd.Flag("config"); fl != nil && fl.Value.String() != "" {
				cfgPath = fl.Value.String()
			}
			if !f.writeConfig {
				cfgPath = ""
			}
			return run(cmd.Context(), f, cfgPath, cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.listen, "listen", "127.0.0.1:7070", "address the API listens on (HTTPS)")
	fs.StringVar(&f.tlsCertFile, "tls-cert-file", "", "your own serving certificate (PEM) instead of one issued by cairn's CA; needs --tls-private-key-file")
	fs.StringVar(&f.tlsKeyFile, "tls-private-key-file", "", "the private key (PEM) of --tls-cert-file")
	fs.BoolVar(&f.insecureHTTP, "insecure-http", false, "serve plain HTTP instead of HTTPS (kubectl and client-go then send no token)")
	fs.StringVar(&f.advertiseURL, "advertise-url", "", "URL other cairn processes reach this server at (default the --listen address)")
	fs.StringVar(&f.dataDir, "data-dir", defaultDataDir(), "directory for the embedded etcd, the admin token and the encryption key")
	fs.StringSliceVar(&f.etcdEndpoints, "etcd-endpoints", nil, "use this external etcd cluster (comma-separated URLs) instead of the embedded one")
	fs.StringVar(&f.encryptionKeyFile, "encryption-key-file", "", "file with the secret-encryption key (default <data-dir>/encryption.key); every server on one etcd needs the same key")
	f.ctrl.AddFlags(fs, "which controllers to run while this server leads them: true (all), false (serve the API only), or a list ("+strings.Join(controllers.Names(), ",")+")")
	fs.DurationVar(&f.compactionInterval, "compaction-interval", 5*time.Minute, "compact store history older than this, this often")
	fs.DurationVar(&f.bookmarkInterval, "bookmark-interval", 30*time.Second, "how often watches receive a BOOKMARK")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.BoolVar(&f.writeConfig, "write-config", true, "write ~/.cairn/config (server, admin token and CA) when it does not exist, and ~/.cairn/kubeconfig")

	// Request hygiene.
	fs.DurationVar(&f.requestBodyTimeout, "request-body-timeout", 30*time.Second,
		"how long a client may take to send a request body; slower ones get 408 and are disconnected")
	fs.DurationVar(&f.storeTimeout, "store-timeout", daemon.DefaultStoreTimeout,
		"how long a request may wait for etcd (its reads, its write and their retries): past it, 503 with Retry-After, or 504 for a write whose outcome is unknown; also how long a watch may hear nothing from etcd before its clients are told")
	namespaceLimitFlags(fs, f)
	fs.IntVar(&f.etcdMaxTxnOps, "etcd-max-txn-ops", daemon.DefaultMaxTxnOps,
		fmt.Sprintf("most compares, and most writes, in one etcd transaction: the embedded etcd's --max-txn-ops; with --etcd-endpoints, the cluster's (at least %d)", daemon.MinTxnOps))
	fs.StringVar(&f.storeQuota, "store-quota", "2Gi", "space quota of the embedded etcd (e.g. 512Mi, 8Gi); past it, writes that add data get 507 until space is freed. With --etcd-endpoints the cluster's own quota applies")
	f.memory.add(cmd)
	fs.StringVar(&f.runtimeDir, "runtime-dir", "", "where the commands the controllers run keep their workspaces, state and logs "+
		"(default "+rtlocal.DefaultRoot+", which units running as users of their own can pass through; <data-dir>/runtime with --runtime-isolation=none)")
	f.runtimeIsolation.AddFlags(fs)
	f.runtimeSelect.AddFlags(fs)
	return cmd
}

func defaultDataDir() string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return filepath.Join(".cairn", "data")
	}
	return filepath.Join(home, ".cairn", "data")
}

func run(ctx context.Context, f *flags, cfgPath string, stderr interface{ Write([]byte) (int, error) }) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: use debug, info, warn or error", f.logLevel)
	}
	if err := absPaths(f); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var endpoints []string
	for _, e := range f.etcdEndpoints {
		if e = strings.TrimSpace(e); e != "" {
			endpoints = append(endpoints, e)
		}
	}
	if f.requestBodyTimeout <= 0 {
		return fmt.Errorf("--request-body-timeout must be positive, got %s", f.requestBodyTimeout)
	}
	if f.storeTimeout <= 0 {
		return fmt.Errorf("--store-timeout must be positive, got %s", f.storeTimeout)
	}
	if f.etcdMaxTxnOps < daemon.MinTxnOps {
		return fmt.Errorf("--etcd-max-txn-ops must be at least %d (one object's write within the metadata limits), got %d", daemon.MinTxnOps, f.etcdMaxTxnOps)
	}
	ctrls, err := f.ctrl.Selected()
	if err != nil {
		return err
	}
	nsObjects, nsBytes, err := namespaceLimits(f)
	if err != nil {
		return err
	}
	quota, err := parseQuota(f.storeQuota)
	if err != nil {
		return err
	}
	isolation, err := f.runtimeIsolation.Isolation()
	if err != nil {
		return err
	}
	opts := daemon.Options{
		Listen: f.listen, AdvertiseURL: f.advertiseURL, DataDir: f.dataDir, EtcdEndpoints: endpoints,
		TLSCertFile: f.tlsCertFile, TLSKeyFile: f.tlsKeyFile, InsecureHTTP: f.insecureHTTP,
		EncryptionKeyFile: f.encryptionKeyFile, ClientConfigPath: cfgPath,
		Controllers: ctrls, CompactionInterval: f.compactionInterval,
		BookmarkInterval: f.bookmarkInterval, LeaderTTL: f.ctrl.LeaderTTL,
		BodyReadTimeout: f.requestBodyTimeout, StoreTimeout: f.storeTimeout,
		NamespaceMaxObjects: nsObjects, NamespaceMaxBytes: nsBytes,
		Logger: log, MaxTxnOps: f.etcdMaxTxnOps, StoreQuota: quota,
		RuntimeDir: f.runtimeDir, RuntimeIsolation: isolation,
	}
	if err := f.memory.apply(&opts); err != nil {
		return err
	}
	if rt, err := f.runtimeSelect.Open(log); err != nil {
		return err
	} else if rt != nil {
		opts.Runtime = rt
	}
	gopace.Set().Log(log)
	d, err := daemon.Start(ctx, opts)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		log.Info("shutting down")
		return d.Stop()
	case <-d.Done():
		return d.Wait()
	}
}

// parseQuota reads --store-quota: a size such as 2Gi, 512Mi or 1G. The
// daemon checks its bounds.
func parseQuota(s string) (int64, error) {
	n, err := parseSize(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("--store-quota %q: give a size such as 2Gi or 512Mi", s)
	}
	return n, nil
}

// errNotWhole: a size flag is a quantity, but not a whole number of bytes.
var errNotWhole = errors.New("not a whole number of bytes")

// parseSize reads a size flag: a number of bytes or a quantity such as
// 512Mi.
func parseSize(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, err
	}
	n, whole := q.AsInt64()
	if !whole {
		return 0, errNotWhole
	}
	return n, nil
}

// noLimitIfZero maps a flag's 0 ("no limit") to the daemon's negative.
func noLimitIfZero[T int | int64 | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

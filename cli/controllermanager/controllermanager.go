// Package controllermanager is the `cairn controller-manager` command: it
// runs cairn's controllers as a separate process against any API server
// (for instance `cairn server --controllers=false`), with leader election
// on the API so that several can run and one acts.
package controllermanager

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/deployitem"
	"cairn.dev/cairn/internal/gopace"
	"cairn.dev/cairn/internal/privfile"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/pki"
	rtkube "cairn.dev/cairn/runtime/kubernetes"
	rtlocal "cairn.dev/cairn/runtime/local"
)

type flags struct {
	server           string
	tokenFile        string
	caFile           string
	listen           string
	advertise        string
	controllers      string
	leaderTTL        time.Duration
	events           controllers.Config
	gcWorkers        int
	logLevel         string
	runtimeDir       string
	runtimeIsolation rtlocal.IsolationFlags
	runtimeSelect    rtkube.Flags

	// timeouts are the deploy item timeouts' defaults.
	timeouts deployitem.Timeouts
}

// New returns the `cairn controller-manager` command.
func New() *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Run cairn's controllers as a separate process against an API server",
		Long: `Run cairn's controllers (` + strings.Join(controllers.Names(), ", ") + `) against the API server at
--server, acting with the token in --token-file. Any number of controller
managers (and cairn servers running controllers) may run: they elect one
leader through the API, which runs the controllers; the others stand by and
take over when it stops or dies.

It serves /healthz, /readyz, /metrics and the traces of its controllers
(which API servers forward 'cairn explain' requests to) on --listen;
everything but the probes needs a bearer token the API server accepts.
At start it obtains a peer certificate of cairn's CA from the API server
(the token must be an admin's) and serves HTTPS with it: API servers
forward trace requests only to a process that proves to be cairn's so.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd.Context(), f, cmd.ErrOrStderr()) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.server, "server", "", "URL of the cairn API server (required)")
	fs.StringVar(&f.tokenFile, "token-file", "", "file holding the bearer token the controllers act with (required; mode 0600)")
	fs.StringVar(&f.caFile, "certificate-authority", "", "PEM file of the CA the server's certificate is issued by (the server's <data-dir>/ca.crt; default the system's roots)")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:7071", "address for health, metrics and traces")
	fs.StringVar(&f.advertise, "advertise-url", "", "URL API servers reach this process at, to forward trace requests (default the --listen address; https:// once it holds a peer certificate)")
	fs.StringVar(&f.controllers, "controllers", "true", "which controllers to run: true (all) or a list ("+strings.Join(controllers.Names(), ",")+")")
	fs.DurationVar(&f.leaderTTL, "leader-ttl", 5*time.Second, "how long a dead leader blocks failover")
	fs.IntVar(&f.gcWorkers, "gc-workers", 8, "concurrent garbage-collector workers")
	f.events.AddEventFlags(fs)
	fs.DurationVar(&f.timeouts.Pickup, "deployitem-pickup-timeout", deployitem.DefaultPickup, "how long a deploy item may wait for a deployer to pick it up before it fails (0: never)")
	fs.DurationVar(&f.timeouts.Aborting, "deployitem-aborting-timeout", deployitem.DefaultAborting, "how long a deployer may take to abort a deploy item before it fails (0: never)")
	fs.DurationVar(&f.timeouts.Progressing, "deployitem-progressing-timeout", deployitem.DefaultProgressing, "how long a deployer may work on a deploy item before it is aborted, unless its spec.timeout says otherwise (0: never)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.runtimeDir, "runtime-dir", "", "where the commands the controllers run keep their workspaces, state and logs "+
		"(default "+defaultIsolatedRuntimeDir+", which units running as users of their own can pass through; ~/.cairn/controller-manager/runtime with --runtime-isolation=none)")
	f.runtimeIsolation.AddFlags(fs)
	f.runtimeSelect.AddFlags(fs)
	return cmd
}

func run(ctx context.Context, f *flags, stderr io.Writer) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: use debug, info, warn or error", f.logLevel)
	}
	switch {
	case f.server == "":
		return errors.New("--server is required: the URL of the cairn API server")
	case f.tokenFile == "":
		return errors.New("--token-file is required: a file holding the token the controllers act with")
	case f.leaderTTL < time.Second:
		return fmt.Errorf("--leader-ttl must be at least 1s, got %s", f.leaderTTL)
	case f.gcWorkers < 0:
		return fmt.Errorf("--gc-workers must not be negative, got %d", f.gcWorkers)
	case f.advertise != "" && !httpURL(f.advertise):
		return fmt.Errorf("--advertise-url %q: want http(s)://host[:port]", f.advertise)
	}
	if err := f.controllersConfig().CheckEvents(); err != nil {
		return err
	}
	ctrls, err := controllers.Select(controllers.List(f.controllersConfig()), f.controllers)
	if err != nil {
		return fmt.Errorf("--controllers: %w", err)
	}
	if len(ctrls) == 0 {
		return errors.New("--controllers selects no controller: a controller manager needs at least one")
	}
	runtimeDir, isolation, err := f.runtime()
	if err != nil {
		return err
	}
	token, err := readToken(f.tokenFile)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg := client.Config{Server: f.server, Token: token, TokenSource: "--token-file " + f.tokenFile, CAFile: f.caFile}
	tlsConfig, err := cfg.TLSConfig()
	if err != nil {
		return fmt.Errorf("--certificate-authority: %w", err)
	}
	c, err := client.NewHTTP(cfg)
	if err != nil {
		return fmt.Errorf("--server: %w", err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	l, url, p, err := listen(ctx, f, tlsConfig, token, log)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	rt, err := f.openRuntime(runtimeDir, isolation, log)
	if err != nil {
		l.Close()
		return err
	}
	defer rt.Close()
	m, err := manager.New(manager.Options{Client: c, Controllers: ctrls, Identity: url, LeaderElection: true,
		LeaseDuration: f.leaderTTL, Logger: log, Metrics: reg, Runtime: rt, APIServer: strings.TrimSuffix(f.server, "/"), APICAFile: f.caFile})
	if err != nil {
		l.Close()
		return err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConfig
	var peers *x509.CertPool
	if p != nil {
		tr.TLSClientConfig, peers = p.apiConfig(tlsConfig), p.roots
	}
	hs := &http.Server{Handler: m.Handler(manager.HandlerOptions{Server: f.server, Metrics: reg, Peers: peers,
		HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: tr}}),
		ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(l) }()
	gopace.Set().Log(log)
	log.Info("cairn controller-manager ready", "url", url, "server", f.server, "controllers", len(ctrls))
	runErr := make(chan error, 1)
	go func() { runErr <- m.Run(ctx) }()
	select {
	case err = <-serveErr:
		err = fmt.Errorf("serve %s: %w", url, err)
		stop()
		<-runErr
	case err = <-runErr:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	log.Info("cairn controller-manager stopped")
	return err
}

// listen opens the manager's listener on --listen and returns it with the
// URL API servers reach it at and its peer certificate. With a peer
// certificate from the API server (obtainPeer) it serves HTTPS with it;
// without one it serves plain HTTP, and warns that API servers will not
// forward trace requests to it. Errors: the address cannot be listened
// on.
func listen(ctx context.Context, f *flags, apiTLS *tls.Config, token string, log *slog.Logger) (net.Listener, string, *peer, error) {
	l, err := net.Listen("tcp", f.listen)
	if err != nil {
		return nil, "", nil, fmt.Errorf("--listen %s: %w", f.listen, err)
	}
	var advertised string
	if u, err := neturl.Parse(f.advertise); err == nil {
		advertised = u.Hostname()
	}
	p, err := obtainPeer(ctx, apiTLS, f.server, token, pki.Hosts(l.Addr().String(), advertised))
	scheme := "https://"
	if err != nil {
		log.Warn("no peer certificate from the API server: serving plain HTTP, so API servers will not forward trace "+
			"requests to this process", "err", err)
		scheme, p = "http://", nil
	} else {
		l = tls.NewListener(l, p.serverConfig())
	}
	url := scheme + l.Addr().String()
	if f.advertise != "" {
		url = strings.TrimSuffix(f.advertise, "/")
		if p != nil && strings.HasPrefix(url, "http://") {
			log.Warn("--advertise-url is http://, but this process serves HTTPS: API servers will not forward trace "+
				"requests to it; advertise https://", "advertise", url)
		}
	}
	return l, url, p, nil
}

// readToken reads a bearer token from path, refusing a file that other
// users may read (it grants the controllers' rights).
func readToken(path string) (string, error) {
	b, err := privfile.Read(path)
	var np *privfile.NotPrivateError
	switch {
	case errors.As(err, &np):
		return "", fmt.Errorf("--token-file %s is readable by other users (mode %04o): run 'chmod 600 %s'", path, np.Mode, path)
	case err != nil:
		return "", fmt.Errorf("--token-file: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("--token-file %s is empty", path)
	}
	return token, nil
}

// httpURL reports whether s is an http(s)://host[:port] URL.
func httpURL(s string) bool {
	u, err := neturl.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// defaultIsolatedRuntimeDir is the runtime dir when units run as users of
// their own: every directory above it lets them pass.
const defaultIsolatedRuntimeDir = "/var/lib/cairn/controller-manager/runtime"

// defaultRuntimeDir is ~/.cairn/controller-manager/runtime.
func defaultRuntimeDir() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(".cairn", "controller-manager", "runtime")
	}
	return filepath.Join(home, ".cairn", "controller-manager", "runtime")
}

// runtime returns the runtime dir and the units' isolation the flags ask
// for. Errors: local.ErrBadIsolation naming the flag.
func (f *flags) runtime() (string, rtlocal.Isolation, error) {
	isolation, err := f.runtimeIsolation.Isolation()
	if err != nil {
		return "", isolation, err
	}
	switch {
	case f.runtimeDir != "":
		return f.runtimeDir, isolation, nil
	case isolation.None:
		return defaultRuntimeDir(), isolation, nil
	default:
		return defaultIsolatedRuntimeDir, isolation, nil
	}
}

// controllersConfig is the controllers' configuration from the flags.
func (f *flags) controllersConfig() controllers.Config {
	cfg := f.events
	cfg.GCWorkers = f.gcWorkers
	cfg.DeployItemTimeouts = deployitem.NeverAsNegative(f.timeouts)
	return cfg
}

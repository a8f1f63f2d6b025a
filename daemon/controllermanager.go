package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	neturl "net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"cairn.dev/cairn/client"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/pki"
	"cairn.dev/cairn/runtime"
	rtlocal "cairn.dev/cairn/runtime/local"
)

// ControllerManagerOptions configures a controller-manager process: the
// controllers run against an API server over HTTP(S), elected among every
// process that runs them.
type ControllerManagerOptions struct {
	// Server is the URL of the API server (required).
	Server string
	// Token is the bearer token the controllers act with (required); an
	// admin's, for the manager to obtain a peer certificate.
	// TokenSource names where it came from, for error messages.
	Token       string
	TokenSource string
	// CAFile is the PEM file of the CA the server's certificate is issued
	// by; "" trusts the system's roots.
	CAFile string
	// Listen is the address of /healthz, /readyz, /metrics and the
	// traces (required).
	Listen string
	// AdvertiseURL is the URL API servers reach this process at; default
	// the listener's.
	AdvertiseURL string
	// Controllers run while this process leads (at least one).
	Controllers []manager.Controller
	// LeaderTTL is how long a dead leader blocks failover; at least 1s.
	LeaderTTL time.Duration
	// RuntimeDir and RuntimeIsolation are the local runtime's, as in
	// Options (RuntimeDir is required here, unless Runtime is set).
	RuntimeDir       string
	RuntimeIsolation rtlocal.Isolation
	// Runtime, when set, is where the controllers run units (the
	// kubernetes runtime) instead of a local runtime in RuntimeDir; the
	// controller manager closes it when it stops. Never a typed nil.
	Runtime runtime.Closer
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// OptionError is an error of StartControllerManager caused by the value
// of one of its options: Option names the field of
// ControllerManagerOptions (a command maps it to its flag).
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return "controller manager: " + e.Option + ": " + e.Err.Error() }

func (e *OptionError) Unwrap() error { return e.Err }

// ControllerManager is a running controller-manager process.
type ControllerManager struct {
	url    string
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	err    error
}

// StartControllerManager assembles a controller-manager process, the
// sibling of Start: it checks opts, opens the runtime, listens (HTTPS
// with a peer certificate it obtains from the API server, plain HTTP with
// a warning when it cannot), builds the manager over an HTTP client and
// runs it and its HTTP handler until Stop or ctx ends. It returns once
// the handler serves. Errors: an *OptionError naming the option for a
// missing or invalid value, a CA file that cannot be read, an unusable
// runtime dir or a taken address; the manager's (manager.New).
func StartControllerManager(ctx context.Context, opts ControllerManagerOptions) (*ControllerManager, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	cfg := client.Config{Server: opts.Server, Token: opts.Token, TokenSource: opts.TokenSource, CAFile: opts.CAFile}
	tlsConfig, err := cfg.TLSConfig()
	if err != nil {
		return nil, &OptionError{Option: "CAFile", Err: err}
	}
	c, err := client.NewHTTP(cfg)
	if err != nil {
		return nil, &OptionError{Option: "Server", Err: err}
	}
	rt := opts.Runtime
	if rt == nil {
		local, err := rtlocal.New(rtlocal.Options{Root: opts.RuntimeDir, Logger: log, Isolation: opts.RuntimeIsolation})
		if err != nil {
			return nil, &OptionError{Option: "RuntimeDir", Err: fmt.Errorf("%s: %w", opts.RuntimeDir, err)}
		}
		rt = local
	}
	l, url, p, err := listenCM(ctx, opts, tlsConfig)
	if err != nil {
		rt.Close()
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m, err := manager.New(manager.Options{Client: c, Controllers: opts.Controllers, Identity: url, LeaderElection: true,
		LeaseDuration: opts.LeaderTTL, Logger: log, Metrics: reg, Runtime: rt, APIServer: strings.TrimSuffix(opts.Server, "/"), APICAFile: opts.CAFile})
	if err != nil {
		l.Close()
		rt.Close()
		return nil, err
	}
	hs := cmHTTPServer(m, opts, reg, tlsConfig, p, runtimeReadiness(rt))
	rctx, cancel := context.WithCancel(ctx)
	cm := &ControllerManager{url: url, cancel: cancel, done: make(chan struct{})}
	go cm.run(rctx, m, hs, l, rt, log)
	log.Info("cairn controller-manager ready", "url", url, "server", opts.Server, "controllers", len(opts.Controllers))
	return cm, nil
}

// validate refuses options that cannot work, naming the option.
func (o ControllerManagerOptions) validate() error {
	bad := func(option, format string, args ...any) error {
		return &OptionError{Option: option, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case o.Server == "":
		return bad("Server", "required: the URL of the cairn API server")
	case o.Token == "":
		return bad("Token", "required: the token the controllers act with")
	case o.Listen == "":
		return bad("Listen", "required: the address for health, metrics and traces")
	case o.RuntimeDir == "" && o.Runtime == nil:
		return bad("RuntimeDir", "required: where the commands the controllers run keep their workspaces")
	case o.LeaderTTL < time.Second:
		return bad("LeaderTTL", "must be at least 1s, got %s", o.LeaderTTL)
	case len(o.Controllers) == 0:
		return bad("Controllers", "selects no controller: a controller manager needs at least one")
	case o.AdvertiseURL != "" && !httpURL(o.AdvertiseURL):
		return bad("AdvertiseURL", "%q: want http(s)://host[:port]", o.AdvertiseURL)
	}
	return nil
}

// cmHTTPServer is the server of m's handler (ready is /readyz's check of
// the runtime): the API server is reached
// with apiTLS, presenting the peer certificate when there is one (p), and
// forwarded requests are believed from cairn's peers only.
func cmHTTPServer(m *manager.Manager, o ControllerManagerOptions, reg *prometheus.Registry, apiTLS *tls.Config, p *cmPeer,
	ready func(context.Context) error) *http.Server {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = apiTLS
	var peers *x509.CertPool
	if p != nil {
		tr.TLSClientConfig, peers = p.apiConfig(apiTLS), p.roots
	}
	return &http.Server{Handler: m.Handler(manager.HandlerOptions{Server: o.Server, Metrics: reg, Peers: peers, Ready: ready,
		HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: tr}}),
		ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn)}
}

// run serves hs on l and runs m until ctx ends or either fails, then
// shuts hs down (10 s at most), closes rt and records why it stopped.
func (cm *ControllerManager) run(ctx context.Context, m *manager.Manager, hs *http.Server, l net.Listener, rt runtime.Closer, log *slog.Logger) {
	defer close(cm.done)
	defer rt.Close()
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(l) }()
	runErr := make(chan error, 1)
	go func() { runErr <- m.Run(ctx) }()
	var err error
	select {
	case err = <-serveErr:
		err = fmt.Errorf("serve %s: %w", cm.url, err)
		cm.cancel()
		<-runErr
	case err = <-runErr:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	log.Info("cairn controller-manager stopped")
	cm.mu.Lock()
	cm.err = err
	cm.mu.Unlock()
}

// URL is the URL the process serves and advertises itself at.
func (cm *ControllerManager) URL() string { return cm.url }

// Stop ends the controllers and the handler and waits until they have;
// it returns why the process stopped (nil when asked to).
func (cm *ControllerManager) Stop() error {
	cm.cancel()
	return cm.Wait()
}

// Wait blocks until the process has stopped and returns why.
func (cm *ControllerManager) Wait() error {
	<-cm.done
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.err
}

// Done is closed once the process has stopped.
func (cm *ControllerManager) Done() <-chan struct{} { return cm.done }

// listenCM opens the manager's listener on o.Listen and returns it with
// the URL API servers reach it at and its peer certificate. With a peer
// certificate from the API server (obtainPeer) it serves HTTPS with it;
// without one it serves plain HTTP, and warns that API servers will not
// forward trace requests to it. Errors: the address cannot be listened
// on.
func listenCM(ctx context.Context, o ControllerManagerOptions, apiTLS *tls.Config) (net.Listener, string, *cmPeer, error) {
	log := o.Logger
	l, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, "", nil, &OptionError{Option: "Listen", Err: err}
	}
	var advertised string
	if u, err := neturl.Parse(o.AdvertiseURL); err == nil {
		advertised = u.Hostname()
	}
	p, err := obtainPeer(ctx, apiTLS, o.Server, o.Token, pki.Hosts(l.Addr().String(), advertised))
	scheme := "https://"
	if err != nil {
		log.Warn("no peer certificate from the API server: serving plain HTTP, so API servers will not forward trace "+
			"requests to this process", "err", err)
		scheme, p = "http://", nil
	} else {
		l = tls.NewListener(l, p.serverConfig())
	}
	url := scheme + l.Addr().String()
	if o.AdvertiseURL != "" {
		url = strings.TrimSuffix(o.AdvertiseURL, "/")
		if p != nil && strings.HasPrefix(url, "http://") {
			log.Warn("--advertise-url is http://, but this process serves HTTPS: API servers will not forward trace "+
				"requests to it; advertise https://", "advertise", url)
		}
	}
	return l, url, p, nil
}

// httpURL reports whether s is an http(s)://host[:port] URL.
func httpURL(s string) bool {
	u, err := neturl.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

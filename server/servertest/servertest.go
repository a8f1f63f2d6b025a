// Package servertest starts a real cairn API server for tests: an embedded
// etcd (or a store shared with another test server), the registry with
// every kind, an admin token, and HTTP on a free loopback port.
package servertest

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/pki"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/server"
	"cairn.dev/cairn/store"
)

// Server is a running test API server. Everything stops at test cleanup.
type Server struct {
	// URL is the server's base URL, "https://127.0.0.1:PORT" (no path).
	URL string
	// Token is an admin bearer token.
	Token string
	// CA is the PEM certificate of the CA that issued the server's
	// certificate: clients trust it (Config, HTTPClient).
	CA []byte
	// Registry, Store and Auth are the server's own, for direct access.
	Registry *registry.Registry
	Store    *store.Store
	Auth     *auth.Authenticator
	// EtcdEndpoint is the etcd client URL, e.g. for a second server or a
	// controller-manager process.
	EtcdEndpoint string
	// KeyFile is the encryption key file; servers sharing a store share it.
	KeyFile string
	// Metrics is the Prometheus registry /metrics serves.
	Metrics *prometheus.Registry
	// API is the HTTP handler, for CloseWatches and OpenWatches.
	API *server.Server

	authority *pki.CA
	hcOnce    sync.Once
	hc        *http.Client
	cancel    context.CancelFunc
	done      chan struct{}
	once      sync.Once
	err       error
}

type config struct {
	store            *store.Store
	endpoint         string
	keyFile          string
	kinds            []registry.Kind
	bookmarkInterval time.Duration
	bodyReadTimeout  time.Duration
	logger           *slog.Logger
	traces           server.TraceSource
	authorize        []authz.Rule
	serverOpts       []func(*server.Options)
	registryOpts     []func(*registry.Options)
	ca               *pki.CA
}

// Option changes how Start builds the server.
type Option func(*config)

// WithStore serves from an existing store (endpoint is its etcd client
// URL) instead of starting an etcd. keyFile is the encryption key file
// the store's secrets were written with ("" creates a new key: only right
// for an empty store).
func WithStore(s *store.Store, endpoint, keyFile string) Option {
	return func(c *config) { c.store, c.endpoint, c.keyFile = s, endpoint, keyFile }
}

// SharedWith serves from other's store with other's encryption key: two
// stateless API servers over one etcd.
func SharedWith(other *Server) Option {
	return func(c *config) {
		WithStore(other.Store, other.EtcdEndpoint, other.KeyFile)(c)
		c.ca = other.authority // servers of one store share their CA
	}
}

// WithKinds serves these kinds instead of kinds.All(kinds.Deps{}).
func WithKinds(k ...registry.Kind) Option {
	return func(c *config) { c.kinds = k }
}

// WithTraces serves GET .../{name}/trace from src (server.Options.Traces);
// without it the trace endpoint answers 503, as a server whose controllers
// run nowhere.
func WithTraces(src server.TraceSource) Option {
	return func(c *config) { c.traces = src }
}

// WithAuthorize adds global authorization rules (registry.Options.Authorize)
// after authz.AllowUnscoped, which every test server has.
func WithAuthorize(rules ...authz.Rule) Option {
	return func(c *config) { c.authorize = append(c.authorize, rules...) }
}

// WithBookmarkInterval sets how often watches send BOOKMARK events.
func WithBookmarkInterval(d time.Duration) Option {
	return func(c *config) { c.bookmarkInterval = d }
}

// WithBodyReadTimeout sets how long reading a request body may take.
func WithBodyReadTimeout(d time.Duration) Option {
	return func(c *config) { c.bodyReadTimeout = d }
}

// WithServerOptions lets f change the server's Options before it is built
// (limits, timeouts); Registry, Auth and Metrics are set already.
func WithServerOptions(f func(*server.Options)) Option {
	return func(c *config) { c.serverOpts = append(c.serverOpts, f) }
}

// WithRegistryOptions lets f change the registry's Options before it is
// built (e.g. the watch backlog bounds).
func WithRegistryOptions(f func(*registry.Options)) Option {
	return func(c *config) { c.registryOpts = append(c.registryOpts, f) }
}

// WithStoreTimeout sets the store timeout of the server's requests and of
// its registry's watches (server.Options.StoreTimeout,
// registry.Options.StoreTimeout).
func WithStoreTimeout(d time.Duration) Option {
	return func(c *config) {
		c.serverOpts = append(c.serverOpts, func(o *server.Options) { o.StoreTimeout = d })
		c.registryOpts = append(c.registryOpts, func(o *registry.Options) { o.StoreTimeout = d })
	}
}

// WithLogger sets the server's logger (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// Start starts a server and stops it at test cleanup. It fails the test
// when any part does not start.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var c config
	for _, o := range opts {
		o(&c)
	}
	c.complete(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reg := c.startRegistry(ctx, t)
	a := auth.New(c.store)
	token, err := a.EnsureAdminToken(ctx, filepath.Join(t.TempDir(), "admin.token"))
	if err != nil {
		t.Fatalf("servertest: admin token: %v", err)
	}
	metrics := prometheus.NewRegistry()
	api := c.newAPI(t, reg, a, metrics)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("servertest: listen: %v", err)
	}
	s := &Server{
		URL: "https://" + l.Addr().String(), Token: token, CA: c.ca.CertPEM, authority: c.ca,
		Registry: reg, Store: c.store, Auth: a, EtcdEndpoint: c.endpoint, KeyFile: c.keyFile,
		Metrics: metrics, API: api,
	}
	s.serve(t, l)
	return s
}

// Stop stops the HTTP server gracefully: it refuses new connections, ends
// open watches, and waits for in-flight requests. The store keeps running
// (until test cleanup), so another server can take over. It is idempotent
// and returns Serve's error.
func (s *Server) Stop() error {
	s.once.Do(func() {
		s.cancel()
		<-s.done
	})
	return s.err
}

// Authority is the CA the server's certificates are issued by (shared by
// the servers of one store), for tests that issue certificates of their
// own, peer certificates or others.
func (s *Server) Authority() *pki.CA { return s.authority }

// CloseWatches cuts every open watch (and streaming) connection as a
// network failure would, so clients must reconnect and resume.
func (s *Server) CloseWatches() { s.API.CloseWatches() }

// NewToken registers a fresh token for u (e.g. a non-admin user) and
// returns it.
func (s *Server) NewToken(t testing.TB, u identity.User) string {
	t.Helper()
	token, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Auth.Register(context.Background(), token, u); err != nil {
		t.Fatalf("servertest: register token: %v", err)
	}
	return token
}

// Config is the client config of the server with the admin token (and
// its CA).
func (s *Server) Config() client.Config {
	return client.Config{Server: s.URL, Token: s.Token, CertificateAuthorityData: string(s.CA)}
}

// HTTPClient returns the server's HTTP client that trusts its CA, for
// requests of a test's own (the same client every call).
func (s *Server) HTTPClient() *http.Client {
	s.hcOnce.Do(func() { s.hc = &http.Client{Transport: s.Transport()} })
	return s.hc
}

// Transport returns a new HTTP transport that trusts the server's CA.
func (s *Server) Transport() *http.Transport {
	pool, _ := pki.Pool(s.CA)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return tr
}

// Client returns an HTTP API client acting with the admin token. It does
// not contact the server.
func (s *Server) Client(t testing.TB) client.Interface {
	t.Helper()
	c, err := client.NewHTTP(s.Config())
	if err != nil {
		t.Fatalf("servertest: client: %v", err)
	}
	return c
}

// Package server is cairn's HTTP API: REST and watch endpoints over the
// registry, bearer-token authentication, errors as api.Status, health and
// readiness probes, and Prometheus metrics.
//
// Every endpoint but /healthz and /readyz needs "Authorization: Bearer
// <token>"; the caller is put into the request context (identity.With) for
// the registry and kind actions to see. The registry authorizes every
// request on a resource; the endpoints that are not resources (/metrics,
// discovery) are authorized here, by the registry's Authorizer.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/console"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
)

// Defaults of Options.
const (
	DefaultMaxBodyBytes    = 3 << 20
	DefaultReadyTimeout    = 2 * time.Second
	DefaultShutdownTimeout = 30 * time.Second
	DefaultBodyReadTimeout = 30 * time.Second
)

// Options configures a Server.
type Options struct {
	// Registry serves the API semantics. Required.
	Registry *registry.Registry
	// Auth authenticates bearer tokens. Required.
	Auth *auth.Authenticator
	// Metrics is where the server registers its collectors and what
	// /metrics serves. Nil gives the server a registry of its own.
	Metrics *prometheus.Registry
	// MaxBodyBytes caps request bodies (413 beyond); default 3 MiB.
	MaxBodyBytes int64
	// BodyReadTimeout bounds how long reading a request body may take
	// (408 beyond, and the connection is closed); default 30s.
	BodyReadTimeout time.Duration
	// Logger receives internal errors (never request bodies or tokens);
	// default: discard.
	Logger *slog.Logger
	// ReadyTimeout bounds the store check of /readyz; default 2s.
	ReadyTimeout time.Duration
	// Ready, when set, is one more check of /readyz (such as the
	// runtime's): an error makes it answer 503 with the error's message.
	Ready func(context.Context) error
	// StoreTimeout bounds the store's part of every request (deadline.go):
	// each store call, and each read or write with its retries, ends
	// within it. A store that does not answer in time is a 503 with
	// Retry-After (a write known not applied, or a read), or a 504 for a
	// write whose outcome is unknown. Authentication of a token not cached
	// waits for the store no longer either. Default DefaultStoreTimeout.
	StoreTimeout time.Duration
	// ShutdownTimeout bounds how long Serve waits for in-flight requests
	// once its context ends before it closes connections; default 30s.
	ShutdownTimeout time.Duration
	// Traces serves GET .../{plural}/{name}/trace: the controllers' traces
	// kept by this process, or the address of the process that keeps them.
	// Nil answers 503.
	Traces TraceSource
	// Dependents serves GET .../{plural}/{name}/dependents from the
	// garbage collector's graph while this process leads the
	// controllers; otherwise the request is forwarded to the leader Traces
	// names. Nil answers 503.
	Dependents DependentsSource
	// TLS, when set, makes Serve speak HTTPS with it (pki.ServerConfig);
	// nil serves plain HTTP.
	TLS *tls.Config
	// Webhooks, when set, serves POST {BasePath}/namespaces/{ns}/gateways/
	// {name}/webhook (the path values "namespace" and "name" set) without
	// an API token: it authenticates deliveries itself (package gateway).
	// Nil: that path is an ordinary, authenticated API path.
	Webhooks http.Handler
	// Peer is how this server deals with other cairn processes (peer.go):
	// it forwards trace requests only to them, believes the caller they
	// assert only from them, and signs their peer certificates. Nil: it
	// forwards nothing, believes no asserted caller and signs nothing.
	Peer *Peer

	// Memory per request (limits.go). MaxRequestsInflight caps the API
	// requests served at once, watches and other long-running responses
	// apart; MaxWatches caps those. Beyond either cap a request is refused
	// with 429 TooManyRequests and Retry-After; /healthz, /readyz and
	// /metrics are never refused. Defaults DefaultMaxRequestsInflight and
	// DefaultMaxWatches; negative: no cap.
	MaxRequestsInflight int
	MaxWatches          int
	// WriteTimeout bounds how long one write of a response may wait for a
	// client that does not read (a watch's or a list's): past it the
	// connection is closed and the request ends. Default
	// DefaultWriteTimeout; negative: no bound.
	WriteTimeout time.Duration
}

// Server is the HTTP API. It is an http.Handler (usable with any listener
// or httptest) and can serve listeners itself with Serve. It is safe for
// concurrent use.
type Server struct {
	opts    Options
	reg     *registry.Registry
	auth    *auth.Authenticator
	log     *slog.Logger
	metrics *metrics
	// inflight caps the requests in flight (limits.go).
	inflight *inflight
	// statuses commits the status writes that arrive together in shared
	// transactions (statusbatch.go).
	statuses *statusBatcher

	mu      sync.Mutex
	streams map[*stream]struct{}
	// forwarder relays trace requests to the controllers' leader, a
	// verified cairn peer; nil without Options.Peer.
	forwarder *http.Client
	// streamForwarder relays logs requests, whose answers stream for as
	// long as a followed unit runs (no overall timeout).
	streamForwarder *http.Client

	// openapi serves the OpenAPI documents, built on their first request.
	openapiOnce sync.Once
	openapi     http.Handler
	openapiErr  error
}

// New builds a Server. It fails when Registry or Auth is missing or when
// the metrics cannot be registered (e.g. a second Server on the same
// prometheus.Registry).
func New(opts Options) (*Server, error) {
	if opts.Registry == nil || opts.Auth == nil {
		return nil, errors.New("server: Options.Registry and Options.Auth are required")
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.BodyReadTimeout <= 0 {
		opts.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if opts.StoreTimeout <= 0 {
		opts.StoreTimeout = DefaultStoreTimeout
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Metrics == nil {
		opts.Metrics = prometheus.NewRegistry()
	}
	m, err := newMetrics(opts.Metrics)
	if err != nil {
		return nil, err
	}
	opts = limitDefaults(opts)
	lim, err := newInflight(opts, opts.Metrics)
	if err != nil {
		return nil, fmt.Errorf("server: register metrics: %w", err)
	}
	return &Server{opts: opts, reg: opts.Registry, auth: opts.Auth, log: opts.Logger,
		metrics: m, inflight: lim, statuses: newStatusBatcher(opts.Registry), streams: map[*stream]struct{}{}, forwarder: opts.Peer.client(), streamForwarder: opts.Peer.streamClient()}, nil
}

// ServeHTTP serves one request. It blocks until the response is complete:
// for a watch or a streaming action, until the client leaves, the stream
// ends, or the server ends or cuts it. Failures are written as api.Status.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w, writeTimeout: s.opts.WriteTimeout}
	s.limitBodyRead(sw, r)
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler { //nolint:errorlint // sentinel compared as net/http does
				panic(v)
			}
			s.log.Error("panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v)
			if !sw.wroteHeader {
				s.writeError(sw, r, fmt.Errorf("server: panic: %v", v))
			}
		}
	}()
	switch p := r.URL.Path; {
	case p == "/healthz":
		writeText(sw, http.StatusOK, "ok\n")
	case p == "/readyz":
		s.serveReady(sw, r)
	case s.opts.Webhooks != nil && isWebhook(p):
		ns, name, _ := webhookRoute(p)
		s.serveWebhook(sw, s.withStoreTimeout(r), ns, name)
	case p == api.BasePath || strings.HasPrefix(p, api.BasePath+"/"):
		s.serveAPI(sw, s.withStoreTimeout(r))
	case console.Serves(p): // static assets, no data: no token needed
		console.Handler().ServeHTTP(sw, r)
	default:
		r, ok := s.authenticate(sw, s.withStoreTimeout(r))
		if !ok {
			return
		}
		if s.serveDiscoveryPath(sw, r) {
			return
		}
		if p == api.PeerCertificatePath {
			s.servePeerCertificate(sw, r)
			return
		}
		if p == api.BackupPath {
			s.serveBackup(sw, r)
			return
		}
		if strings.HasPrefix(p, "/openapi/") {
			s.serveOpenAPI(sw, r)
			return
		}
		if err := s.authorizePath(r); err != nil {
			s.writeError(sw, r, err)
			return
		}
		if p == "/metrics" {
			s.metrics.handler.ServeHTTP(sw, r)
			return
		}
		s.writeError(sw, r, api.NewStatus(api.ReasonNotFound, "the path %q is not served", p))
	}
}

// authenticate checks the bearer token and returns the request with the
// caller in its context; on failure it writes the error and returns false.
// A request from a verified cairn peer carries its caller in
// identity.PeerHeader instead (peerCaller).
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if u, ok := s.peerCaller(r); ok {
		return r.WithContext(identity.With(r.Context(), u)), true
	}
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		s.writeError(w, r, api.NewStatus(api.ReasonUnauthorized, "missing bearer token: send \"Authorization: Bearer <token>\""))
		return r, false
	}
	u, err := s.auth.Authenticate(r.Context(), strings.TrimSpace(token))
	if err != nil {
		s.writeError(w, r, err)
		return r, false
	}
	return r.WithContext(identity.With(r.Context(), u)), true
}

// authorizePath authorizes the authenticated request r on an endpoint that
// is not a resource (its verb is the lower-case method), with the
// registry's Authorizer: Forbidden when it refuses.
func (s *Server) authorizePath(r *http.Request) error {
	u, _ := identity.From(r.Context())
	return s.reg.Authorizer().Authorize(r.Context(), authz.Attributes{
		User: u, Verb: strings.ToLower(r.Method), Path: r.URL.Path})
}

// serveReady answers 200 when the store answers within ReadyTimeout and
// is not full; 503 otherwise, saying which.
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.ReadyTimeout)
	defer cancel()
	if _, err := s.reg.Store().Revision(ctx); err != nil {
		s.writeError(w, r, api.NewStatus(api.ReasonUnavailable, "the store does not answer"))
		return
	}
	if err := storeFull(s.reg.Store().Space()); err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.opts.Ready != nil {
		if err := s.opts.Ready(ctx); err != nil {
			s.writeError(w, r, api.NewStatus(api.ReasonUnavailable, "%s", err.Error()))
			return
		}
	}
	writeText(w, http.StatusOK, "ok\n")
}

// storeFull is the readiness error of a full store, nil for another.
func storeFull(sp store.Space) error {
	if !sp.Full {
		return nil
	}
	return api.NewStatus(api.ReasonUnavailable, "the store is full: %s. Reads and deletions work; writes that add data "+
		"are refused until space is freed, and cairn then accepts them again by itself", sp)
}

// Serve serves HTTP (HTTPS with Options.TLS) on l until ctx ends or the
// listener fails. When ctx
// ends it stops accepting connections, ends every watch and streaming
// response cleanly, waits up to ShutdownTimeout for in-flight requests, and
// returns nil (or the shutdown error after closing the remaining
// connections). A listener failure is returned wrapped. Serve may be called
// for several listeners at once.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	if s.opts.TLS != nil {
		l = tls.NewListener(l, s.opts.TLS)
	}
	st := &serveState{}
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		// Requests outlive ctx so that they drain; streams end through st.
		BaseContext: func(net.Listener) context.Context {
			return context.WithValue(context.WithoutCancel(ctx), serveKey{}, st)
		},
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("server: serve %s: %w", l.Addr(), err)
	case <-ctx.Done():
	}
	s.endStreams(st, errShutdown)
	sctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	err := hs.Shutdown(sctx)
	<-errc
	if err != nil {
		hs.Close()
		return fmt.Errorf("server: shutdown: %w", err)
	}
	return nil
}

// CloseWatches cuts every open watch and streaming connection abruptly, as
// a network failure would, without stopping the server. Clients see the
// connection drop mid-stream. It does not block.
func (s *Server) CloseWatches() { s.endStreams(nil, errCut) }

// OpenWatches returns the number of open watch and streaming responses.
func (s *Server) OpenWatches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.streams)
}

package servertest

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/pki"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/server"
	"cairn.dev/cairn/store/storetest"
)

// The steps of Start, in the order it takes them. Each fails the test when
// its part does not start.

// complete fills what the options left out: an embedded etcd (stopped at
// test cleanup), a new encryption key file in a temporary directory, and
// every kind.
func (c *config) complete(t testing.TB) {
	t.Helper()
	if c.store == nil {
		c.store, c.endpoint = storetest.Start(t)
	}
	if c.keyFile == "" {
		c.keyFile = filepath.Join(t.TempDir(), "encryption.key")
	}
	if c.kinds == nil {
		c.kinds = kinds.All(kinds.Deps{})
	}
}

// startRegistry loads (or creates) the encryption key, builds the registry
// over the store and initializes the store's system objects; the registry
// is closed at test cleanup, before the store's (registered earlier).
func (c *config) startRegistry(ctx context.Context, t testing.TB) *registry.Registry {
	t.Helper()
	enc, err := registry.LoadOrCreateKey(c.keyFile)
	if err != nil {
		t.Fatalf("servertest: encryption key: %v", err)
	}
	// As the daemon does, user tokens without a scope may do everything
	// but force deletions; scoped tokens get what rules grant their scope.
	ropts := registry.Options{Kinds: c.kinds, Encryption: enc,
		BookmarkInterval: c.bookmarkInterval, Authorize: append([]authz.Rule{authz.AllowUnscoped}, c.authorize...)}
	for _, f := range c.registryOpts {
		f(&ropts)
	}
	reg, err := registry.New(c.store, ropts)
	if err != nil {
		t.Fatalf("servertest: registry: %v", err)
	}
	t.Cleanup(reg.Close) // runs before the store's cleanup (registered earlier)
	if err := reg.Init(ctx); err != nil {
		t.Fatalf("servertest: init registry: %v", err)
	}
	return reg
}

// newAPI builds the API server over reg and a: its serving certificate
// (and, as the daemon does, a peer certificate for other cairn processes)
// from the shared CA, or from a new one it keeps in c.ca.
func (c *config) newAPI(t testing.TB, reg *registry.Registry, a *auth.Authenticator, metrics *prometheus.Registry) *server.Server {
	t.Helper()
	if c.ca == nil {
		var err error
		if c.ca, err = pki.NewCA("cairn-test"); err != nil {
			t.Fatalf("servertest: CA: %v", err)
		}
	}
	cert, err := c.ca.Issue(pki.Hosts("127.0.0.1:0", ""))
	if err != nil {
		t.Fatalf("servertest: serving certificate: %v", err)
	}
	peer, err := c.ca.IssuePeer(nil)
	if err != nil {
		t.Fatalf("servertest: peer certificate: %v", err)
	}
	sopts := server.Options{Registry: reg, Auth: a, Metrics: metrics,
		BodyReadTimeout: c.bodyReadTimeout, Logger: c.logger, ShutdownTimeout: 10 * time.Second, Traces: c.traces,
		TLS: pki.PeerServerConfig(cert, peer, c.ca.Pool()), Peer: &server.Peer{CA: c.ca, Cert: peer}}
	for _, f := range c.serverOpts {
		f(&sopts)
	}
	api, err := server.New(sopts)
	if err != nil {
		t.Fatalf("servertest: server: %v", err)
	}
	return api
}

// serve runs s.API on l in a goroutine until Stop, which test cleanup
// calls; it does not block. The cleanup is registered after storetest's,
// so it runs before etcd stops.
func (s *Server) serve(t testing.TB, l net.Listener) {
	t.Helper()
	sctx, scancel := context.WithCancel(context.Background())
	s.cancel, s.done = scancel, make(chan struct{})
	go func() {
		defer close(s.done)
		s.err = s.API.Serve(sctx, l)
	}()
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("servertest: stop: %v", err)
		}
	})
}

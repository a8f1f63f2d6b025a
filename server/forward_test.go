package server_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	cairnclient "cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/lease"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/pki"
	"cairn.dev/cairn/server"
	"cairn.dev/cairn/server/servertest"
)

// leaseTraces is the trace source of a server that does not lead the
// controllers: the leader is whoever the controllers' Lease names, as in
// the daemon.
type leaseTraces struct{ c cairnclient.Interface }

func (leaseTraces) Trace(string, string, string) (*api.Trace, bool) { return nil, false }

func (l *leaseTraces) Leader(ctx context.Context) (string, error) {
	return lease.Current(ctx, l.c, manager.LeaseName)
}

// startFollower starts a test server that leads no controllers and reads
// the leader from the Lease, with a namespace demo holding the Secret s.
func startFollower(t *testing.T, opts ...servertest.Option) (*servertest.Server, cairnclient.Interface) {
	t.Helper()
	src := &leaseTraces{}
	srv := servertest.Start(t, append(opts, servertest.WithTraces(src))...)
	src.c = local.New(srv.Registry, identity.System())
	ctx := context.Background()
	if _, err := src.c.Create(ctx, testkit.Object(api.KindNamespace, "", "demo")); err != nil {
		t.Fatal(err)
	}
	if _, err := src.c.Create(ctx, testkit.Secret("demo", "s", map[string]string{"k": "v"})); err != nil {
		t.Fatal(err)
	}
	return srv, src.c
}

// setLeader writes holder into the controllers' Lease, as a live leader.
func setLeader(t *testing.T, c cairnclient.Interface, holder string) {
	t.Helper()
	ctx := context.Background()
	leases := cairnclient.For[*api.Lease](c)
	spec := api.LeaseSpec{HolderIdentity: holder, LeaseDurationSeconds: 60, AcquireTime: time.Now(), RenewTime: time.Now()}
	l, err := leases.Get(ctx, "", manager.LeaseName)
	if err != nil {
		l = &api.Lease{ObjectMeta: api.ObjectMeta{Name: manager.LeaseName}, Spec: spec}
		if _, err := leases.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
		return
	}
	l.Spec = spec
	if _, err := leases.Update(ctx, l); err != nil {
		t.Fatal(err)
	}
}

// recorder is a fake leader: it records the headers of every request it
// gets (none, when the forwarding server refuses it in the handshake).
type recorder struct {
	mu   sync.Mutex
	seen []http.Header
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.mu.Lock()
	rec.seen = append(rec.seen, r.Header.Clone())
	rec.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"kind":"Trace"}`)
}

func (rec *recorder) headers() []http.Header {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.seen
}

// getStatus GETs path on srv with token ("" for none) and extra headers,
// and returns the code and the body's message.
func getStatus(t *testing.T, hc *http.Client, url, token string, h http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range h {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st api.Status
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &st)
	return resp.StatusCode, st.Message
}

// TestForward_LeaseHolderThatIsNoCairnPeerIsRefusedAndGetsNoToken writes
// fake leaders into the Lease — plain HTTP, TLS with a certificate of
// another CA (even one marked as a peer's), TLS with a serving certificate
// of cairn's own CA — and checks that a trace request with an admin token
// is refused naming the address and why, and that the fake received
// neither the token nor an asserted caller.
func TestForward_LeaseHolderThatIsNoCairnPeerIsRefusedAndGetsNoToken(t *testing.T) {
	srv, c := startFollower(t)
	other, err := pki.NewCA("not-cairn")
	if err != nil {
		t.Fatal(err)
	}
	foreignPeer, err := other.IssuePeer([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	serving, err := srv.Authority().Issue([]string{"127.0.0.1", pki.PeerName})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cert *tls.Certificate // nil: plain HTTP
		want string
	}{
		{"plain HTTP", nil, "serves plain HTTP"},
		{"certificate of another CA", &foreignPeer, "not issued by cairn's CA"},
		{"serving certificate of cairn's CA", &serving, "no cairn peer certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			fake := httptest.NewUnstartedServer(rec)
			fake.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
			if tc.cert == nil {
				fake.Start()
			} else {
				fake.TLS = &tls.Config{Certificates: []tls.Certificate{*tc.cert}}
				fake.StartTLS()
			}
			t.Cleanup(fake.Close)
			setLeader(t, c, fake.URL)

			code, msg := getStatus(t, srv.HTTPClient(), srv.URL+api.BasePath+"/namespaces/demo/secrets/s/trace", srv.Token, nil)
			if code != http.StatusServiceUnavailable || !strings.Contains(msg, fake.URL) || !strings.Contains(msg, tc.want) {
				t.Errorf("GET trace = %d %q, want 503 naming %s and saying %q", code, msg, fake.URL, tc.want)
			}
			for _, h := range rec.headers() {
				if h.Get("Authorization") != "" || h.Get(identity.PeerHeader) != "" {
					t.Errorf("the fake leader received credentials (Authorization %t, %s %t)",
						h.Get("Authorization") != "", identity.PeerHeader, h.Get(identity.PeerHeader) != "")
				}
			}
			if tc.cert != nil && len(rec.headers()) != 0 {
				t.Errorf("the fake leader received %d requests over TLS it should have been refused in", len(rec.headers()))
			}
		})
	}
}

// TestForward_ServerWithoutPeerCertificateForwardsNothing: a server with
// no peer certificate (one on plain HTTP) refuses to forward, even to a
// real cairn peer, saying why.
func TestForward_ServerWithoutPeerCertificateForwardsNothing(t *testing.T) {
	srv, c := startFollower(t, servertest.WithServerOptions(func(o *server.Options) { o.Peer = nil }))
	rec := &recorder{}
	fake := httptest.NewUnstartedServer(rec)
	fake.Config.ErrorLog = log.New(io.Discard, "", 0)
	peer, err := srv.Authority().IssuePeer(nil)
	if err != nil {
		t.Fatal(err)
	}
	fake.TLS = &tls.Config{Certificates: []tls.Certificate{peer}}
	fake.StartTLS()
	defer fake.Close()
	setLeader(t, c, fake.URL)
	code, msg := getStatus(t, srv.HTTPClient(), srv.URL+api.BasePath+"/namespaces/demo/secrets/s/trace", srv.Token, nil)
	if code != http.StatusServiceUnavailable || !strings.Contains(msg, "no peer certificate") || len(rec.headers()) != 0 {
		t.Errorf("GET trace = %d %q with %d requests forwarded, want 503 saying the server has no peer certificate and none",
			code, msg, len(rec.headers()))
	}
}

// peerClient is an HTTP client trusting srv's CA and presenting cert as
// its client certificate.
func peerClient(srv *servertest.Server, cert *tls.Certificate) *http.Client {
	tr := srv.Transport()
	if cert != nil {
		tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: tr}
}

// TestForward_AssertedCallerCountsOnlyFromACairnPeer: the caller asserted
// in identity.PeerHeader is believed from a client presenting a peer
// certificate of cairn's CA, and authorized as that caller; from any
// other client (no certificate, another CA's, a serving certificate of
// cairn's CA) it is ignored: the request is its own token's, and 401
// without one.
func TestForward_AssertedCallerCountsOnlyFromACairnPeer(t *testing.T) {
	srv, _ := startFollower(t)
	worker := srv.NewToken(t, identity.User{Name: "event:demo/e1", Scope: "demo/e1"})
	admin := http.Header{identity.PeerHeader: {identity.EncodeHeader(identity.User{Name: "admin", Admin: true})}}
	asWorker := http.Header{identity.PeerHeader: {identity.EncodeHeader(identity.User{Name: "event:demo/e1", Scope: "demo/e1"})}}
	peer, err := srv.Authority().IssuePeer(nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.NewCA("not-cairn")
	if err != nil {
		t.Fatal(err)
	}
	foreignPeer, err := other.IssuePeer(nil)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := srv.Authority().Issue([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	secret := srv.URL + api.BasePath + "/namespaces/demo/secrets/s"
	for _, tc := range []struct {
		name   string
		cert   *tls.Certificate
		token  string
		header http.Header
		code   int
	}{
		{"peer asserting an admin", &peer, "", admin, http.StatusOK},
		{"peer asserting a worker that may not read Secrets", &peer, "", asWorker, http.StatusForbidden},
		{"peer asserting a malformed caller", &peer, "", http.Header{identity.PeerHeader: {"e30"}}, http.StatusUnauthorized},
		{"no certificate, no token", nil, "", admin, http.StatusUnauthorized},
		{"no certificate, a worker token", nil, worker, admin, http.StatusForbidden},
		{"certificate of another CA", &foreignPeer, "", admin, http.StatusUnauthorized},
		{"serving certificate of cairn's CA", &serving, "", admin, http.StatusUnauthorized},
		{"serving certificate of cairn's CA, a worker token", &serving, worker, admin, http.StatusForbidden},
	} {
		if code, msg := getStatus(t, peerClient(srv, tc.cert), secret, tc.token, tc.header); code != tc.code {
			t.Errorf("%s: GET %s = %d %q, want %d", tc.name, secret, code, msg, tc.code)
		}
	}
}

// TestForward_PeerCertificatesAreForAdminsOnly: the API signs a peer
// certificate for an admin's certificate request, and refuses others.
func TestForward_PeerCertificatesAreForAdminsOnly(t *testing.T) {
	srv, _ := startFollower(t)
	csr, _, err := pki.NewPeerRequest([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(api.PeerCertificateRequest{CSR: string(csr)})
	user := srv.NewToken(t, identity.User{Name: "alice"})
	worker := srv.NewToken(t, identity.User{Name: "event:demo/e1", Scope: "demo/e1"})
	for _, tc := range []struct {
		name, token, body string
		code              int
	}{
		{"admin", srv.Token, string(body), http.StatusOK},
		{"user that is no admin", user, string(body), http.StatusForbidden},
		{"worker", worker, string(body), http.StatusForbidden},
		{"no token", "", string(body), http.StatusUnauthorized},
		{"no CSR", srv.Token, `{"csr":"x"}`, http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+api.PeerCertificatePath, strings.NewReader(tc.body))
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := srv.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var pc api.PeerCertificate
		_ = json.NewDecoder(resp.Body).Decode(&pc)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s: POST %s = %d, want %d", tc.name, api.PeerCertificatePath, resp.StatusCode, tc.code)
		}
		if tc.code == http.StatusOK && (!strings.Contains(pc.Certificate, "CERTIFICATE") || pc.CA != string(srv.CA)) {
			t.Errorf("%s: answer %+v, want a certificate and the server's CA", tc.name, pc)
		}
	}
}

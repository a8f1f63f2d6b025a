package daemon_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/lease"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/pki"
	"cairn.dev/cairn/store/storetest"
)

// TestForward_FollowerForwardsToTheLeadingServerAsTheCaller: a pure API
// server forwards trace requests to the server that leads the
// controllers, which answers them for the caller the follower asserts:
// an admin gets the trace, a worker what its scope grants. The leader
// believes the asserted caller from a cairn peer only.
func TestForward_FollowerForwardsToTheLeadingServerAsTheCaller(t *testing.T) {
	lead, follow, c := leaderAndFollower(t, daemon.Options{})
	ctx := context.Background()
	if _, err := c.Create(ctx, testkit.Secret("demo", "s", password())); err != nil {
		t.Fatal(err)
	}
	worker := identity.User{Name: "event:demo/e1", Scope: "demo/e1"}
	workerToken, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.New(follow.Store()).Register(ctx, workerToken, worker); err != nil {
		t.Fatal(err)
	}
	trace := api.BasePath + "/namespaces/demo/secrets/s/trace"

	// Through the follower, which does not lead.
	hc := testkit.HTTPClient(t, follow.ClientConfig())
	for _, tc := range []struct {
		name, token string
		code        int
	}{
		{"admin", follow.Token(), http.StatusOK},
		{"worker that may not read Secrets", workerToken, http.StatusForbidden},
		{"no token", "", http.StatusUnauthorized},
	} {
		req, _ := http.NewRequest(http.MethodGet, follow.URL()+trace, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var tr api.Trace
		_ = json.NewDecoder(resp.Body).Decode(&tr)
		resp.Body.Close()
		if resp.StatusCode != tc.code || (tc.code == http.StatusOK && (tr.Kind != api.KindTrace || tr.Object.Name != "s")) {
			t.Errorf("%s: GET %s on the follower = %d %+v, want %d", tc.name, trace, resp.StatusCode, tr.Object, tc.code)
		}
	}

	// At the leader, as the follower reaches it: the asserted caller is
	// authorized as itself, and only from a cairn peer.
	peer := testkit.PeerClient(t, lead.ClientConfig(), testkit.PeerCertificate(t, follow.ClientConfig()))
	if code := testkit.AsPeer(t, peer, lead.URL()+trace, auth.AdminUser()); code != http.StatusOK {
		t.Errorf("a peer asserting an admin at the leader: %d, want 200", code)
	}
	if code := testkit.AsPeer(t, peer, lead.URL()+trace, worker); code != http.StatusForbidden {
		t.Errorf("a peer asserting a worker at the leader: %d, want 403", code)
	}
	if code := testkit.AsPeer(t, hc, lead.URL()+trace, auth.AdminUser()); code != http.StatusUnauthorized {
		t.Errorf("a client without a peer certificate asserting an admin at the leader: %d, want 401", code)
	}
}

// TestForward_LeaderWithItsOwnServingCertificateStillAnswersPeers: a
// leading server that shows its clients an operator's certificate
// (--tls-cert-file, another CA) answers peers with its peer certificate,
// so that a follower's forwarding reaches it.
func TestForward_LeaderWithItsOwnServingCertificateStillAnswersPeers(t *testing.T) {
	certFile, keyFile := operatorCertificate(t)
	_, follow, _ := leaderAndFollower(t, daemon.Options{TLSCertFile: certFile, TLSKeyFile: keyFile})
	req, _ := http.NewRequest(http.MethodGet, follow.URL()+api.BasePath+"/namespaces/demo/trace", nil)
	req.Header.Set("Authorization", "Bearer "+follow.Token())
	resp, err := testkit.HTTPClient(t, follow.ClientConfig()).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tr api.Trace
	_ = json.NewDecoder(resp.Body).Decode(&tr)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || tr.Kind != api.KindTrace {
		t.Errorf("GET the trace through the follower = %d %+v, want 200 and a Trace", resp.StatusCode, tr)
	}
}

// operatorCertificate writes a serving certificate for 127.0.0.1 of a CA
// that is not cairn's, and its key, as an operator would supply them.
func operatorCertificate(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	ca, err := pki.NewCA("operator")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// leaderAndFollower starts two servers on one etcd: one with the
// controllers (and the options of lead's it sets), which it waits to lead,
// and one without, whose client it returns; and the namespace demo.
func leaderAndFollower(t *testing.T, lead daemon.Options) (leader, follower *daemon.Daemon, c client.Interface) {
	t.Helper()
	_, endpoint := storetest.Start(t)
	key := filepath.Join(t.TempDir(), "shared.key")
	lead.DataDir, lead.EtcdEndpoints, lead.EncryptionKeyFile = dataDir(t), []string{endpoint}, key
	lead.Controllers, lead.LeaderTTL = controllers.List(controllers.Config{}), 2*time.Second
	leader = start(t, lead)
	follower = start(t, daemon.Options{DataDir: dataDir(t), EtcdEndpoints: []string{endpoint}, EncryptionKeyFile: key})
	ctx := context.Background()
	c = httpClient(t, follower)
	testkit.Eventually(t, 15*time.Second, "the server with controllers to lead", func() bool {
		id, _ := lease.Current(ctx, c, manager.LeaseName)
		return id == leader.URL()
	})
	if _, err := c.Create(ctx, testkit.Object(api.KindNamespace, "", "demo")); err != nil {
		t.Fatal(err)
	}
	return leader, follower, c
}

package pki_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"cairn.dev/cairn/pki"
)

func TestCA_EncodesDecodesAndIssuesCertificatesClientsVerify(t *testing.T) {
	ca, err := pki.NewCA("cairn-test")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := ca.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := pki.DecodeCA(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Cert.Equal(ca.Cert) {
		t.Fatal("the decoded CA is another certificate")
	}
	// A certificate issued by the decoded authority verifies against the
	// original's PEM for each of its hosts, IP or name, and for no other.
	cert, err := back.Issue([]string{"127.0.0.1", "cairn.example"})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pki.Pool(ca.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	for host, ok := range map[string]bool{"127.0.0.1": true, "cairn.example": true, "10.9.9.9": false, "other.example": false} {
		_, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host})
		if (err == nil) != ok {
			t.Errorf("verify for %s: %v, want ok=%v", host, err, ok)
		}
	}
	if _, err := pki.DecodeCA(ca.CertPEM); err == nil {
		t.Fatal("a CA without its key decoded")
	}
	if _, err := back.Issue(nil); err == nil {
		t.Fatal("a certificate for no host was issued")
	}
}

func TestServerConfig_AClientTrustingTheCASpeaksTLSToIt(t *testing.T) {
	ca, err := pki.NewCA("cairn-test")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue(pki.Hosts("127.0.0.1:0", ""))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") }))
	srv.TLS = pki.ServerConfig(cert)
	srv.StartTLS()
	defer srv.Close()
	pool, _ := pki.Pool(ca.CertPEM)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// A client that does not trust the CA is refused.
	if _, err := (&http.Client{Transport: &http.Transport{}}).Get(srv.URL); err == nil {
		t.Fatal("a client without the CA connected")
	}
}

func TestHosts_CoverTheListenAddressAndLoopback(t *testing.T) {
	if h := pki.Hosts("10.1.2.3:7070", "cairn.example"); !slices.Contains(h, "10.1.2.3") || !slices.Contains(h, "cairn.example") ||
		!slices.Contains(h, "127.0.0.1") || !slices.Contains(h, "localhost") {
		t.Fatalf("hosts of a specific address: %v", h)
	}
	wild := pki.Hosts("0.0.0.0:7070", "")
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !slices.Contains(wild, n.IP.String()) {
			t.Errorf("hosts of a wildcard address lack the interface address %s: %v", n.IP, wild)
		}
	}
}

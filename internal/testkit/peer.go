package testkit

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/pki"
)

// PeerCertificate obtains a peer certificate of cairn's CA from the
// server of cfg (whose token must be an admin's), as a controller manager
// does at start, for a test that plays a cairn process.
func PeerCertificate(t testing.TB, cfg client.Config) tls.Certificate {
	t.Helper()
	csr, key, err := pki.NewPeerRequest([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(api.PeerCertificateRequest{CSR: string(csr)})
	req, _ := http.NewRequest(http.MethodPost, strings.TrimSuffix(cfg.Server, "/")+api.PeerCertificatePath, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+cfg.Token)
	resp, err := HTTPClient(t, cfg).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var pc api.PeerCertificate
	if err := json.NewDecoder(resp.Body).Decode(&pc); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s = %d (%v)", api.PeerCertificatePath, resp.StatusCode, err)
	}
	cert := tls.Certificate{PrivateKey: key}
	for block, rest := pem.Decode([]byte(pc.Certificate)); block != nil; block, rest = pem.Decode(rest) {
		cert.Certificate = append(cert.Certificate, block.Bytes)
	}
	return cert
}

// AsPeer sends a GET of url as a cairn peer would: over client (see
// PeerClient) with the caller u asserted in identity.PeerHeader, no token.
// It returns the response's code.
func AsPeer(t testing.TB, c *http.Client, url string, u identity.User) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set(identity.PeerHeader, identity.EncodeHeader(u))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// PeerClient is HTTPClient(cfg) presenting cert as its client
// certificate.
func PeerClient(t testing.TB, cfg client.Config, cert tls.Certificate) *http.Client {
	t.Helper()
	hc := HTTPClient(t, cfg)
	tr := hc.Transport.(*http.Transport)
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tr.TLSClientConfig.Certificates = []tls.Certificate{cert}
	return hc
}

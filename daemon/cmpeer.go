package daemon

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/pki"
)

// A controller manager proves to API servers that it is a cairn process
// with a peer certificate of cairn's CA, which it obtains at start from
// the API server, as the admin its token names: API servers forward trace
// requests only to such a peer, asserting the caller instead of sending a
// token, and the manager relays that assertion to the API server over its
// own peer connection. Without one (an API server on plain HTTP, or a
// token that is no admin's) it serves plain HTTP, and API servers refuse
// to forward to it.

// cmPeer is the controller manager's part among cairn's processes.
type cmPeer struct {
	// cert is its peer certificate, which it serves and presents.
	cert tls.Certificate
	// roots holds cairn's CA: what forwarding servers are verified with.
	roots *x509.CertPool
}

// serverConfig is the TLS configuration of the manager's listener.
func (p *cmPeer) serverConfig() *tls.Config { return pki.PeerServerConfig(p.cert, p.cert, p.roots) }

// apiConfig is apiTLS (the client configuration the API server is reached
// with; nil: the system's roots) presenting the peer certificate.
func (p *cmPeer) apiConfig(apiTLS *tls.Config) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if apiTLS != nil {
		cfg = apiTLS.Clone()
	}
	cfg.Certificates = []tls.Certificate{p.cert}
	return cfg
}

// obtainPeer asks the API server at server, with token, for a peer
// certificate for hosts (the names the manager is reached at). It blocks
// for one request of at most 10 seconds. Errors: the server's refusal
// (403 for a token that is no admin's, 503 for a server without a CA),
// no answer, or an answer that is no peer certificate of the CA it names.
func obtainPeer(ctx context.Context, apiTLS *tls.Config, server, token string, hosts []string) (*cmPeer, error) {
	csr, key, err := pki.NewPeerRequest(hosts)
	if err != nil {
		return nil, err
	}
	body, _ := json.Marshal(api.PeerCertificateRequest{CSR: string(csr)}) // a string field
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(server, "/")+api.PeerCertificatePath, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = apiTLS
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var st api.Status
		if json.Unmarshal(raw, &st) == nil && st.Message != "" {
			return nil, fmt.Errorf("the API server answered %d: %s", resp.StatusCode, st.Message)
		}
		return nil, fmt.Errorf("the API server answered %d", resp.StatusCode)
	}
	var pc api.PeerCertificate
	if err := json.Unmarshal(raw, &pc); err != nil {
		return nil, fmt.Errorf("the API server's answer is no PeerCertificate: %w", err)
	}
	return parsePeer(pc, key)
}

// parsePeer checks that pc is a peer certificate of the CA it names for
// key. Errors: malformed PEM, or a certificate that is no such peer's.
func parsePeer(pc api.PeerCertificate, key *ecdsa.PrivateKey) (*cmPeer, error) {
	roots, err := pki.Pool([]byte(pc.CA))
	if err != nil {
		return nil, err
	}
	cert := tls.Certificate{PrivateKey: key}
	var chain []*x509.Certificate
	for block, rest := pem.Decode([]byte(pc.Certificate)); block != nil; block, rest = pem.Decode(rest) {
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("the peer certificate: %w", err)
		}
		cert.Certificate, chain = append(cert.Certificate, block.Bytes), append(chain, c)
	}
	if err := pki.VerifyPeer(chain, roots, x509.ExtKeyUsageServerAuth); err != nil {
		return nil, err
	}
	if pub, ok := chain[0].PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, errors.New("the peer certificate is not for this process's key")
	}
	cert.Leaf = chain[0]
	return &cmPeer{cert: cert, roots: roots}, nil
}

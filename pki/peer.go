package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"time"
)

// Peer certificates prove that a TLS party is a cairn process (an API
// server or a controller manager), not just a holder of some certificate
// cairn's CA issued: cairn issues them only to its own processes, and
// every process that holds one is trusted alike. A peer certificate
// carries the URI SAN PeerURI, the DNS name PeerName (what a peer asks
// for in TLS's server name indication, so that a server that serves its
// clients with another certificate answers peers with this one) and the
// extended key usages server and client authentication.
const (
	// PeerURI marks a peer certificate.
	PeerURI = "urn:cairn:peer"
	// PeerName is the server name peers ask for and peer certificates
	// hold. It is no host name (.invalid is reserved for that).
	PeerName = "peer.cairn.invalid"
)

// Errors of VerifyPeer, declared once.
var (
	// ErrNoPeerCertificate: the party presented no certificate.
	ErrNoPeerCertificate = errors.New("pki: no certificate presented")
	// ErrNotCairnCA: the certificate is not issued by cairn's CA.
	ErrNotCairnCA = errors.New("pki: the certificate is not issued by cairn's CA")
	// ErrNotPeer: a certificate of cairn's CA, but no peer certificate.
	ErrNotPeer = errors.New("pki: the certificate is issued by cairn's CA but is no cairn peer certificate")
)

// IssuePeer returns a peer certificate for a new key, valid for
// ServingLifetime, for PeerName and hosts (IP addresses or DNS names,
// may be none), with ca's certificate in its chain. Errors: only a
// signing failure.
func (ca *CA) IssuePeer(hosts []string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: peer key: %w", err)
	}
	return ca.sign(peerTemplate(), key, hosts, "peer certificate")
}

// SignPeer signs the certificate request csrPEM (PEM "CERTIFICATE
// REQUEST") as a peer certificate for the request's key, its IP addresses
// and DNS names (and PeerName), and returns the certificate and ca's as
// PEM. The caller decides who may have one. Errors: a malformed request,
// a bad request signature, or a signing failure.
func (ca *CA) SignPeer(csrPEM []byte) ([]byte, error) {
	block, _ := pem.Decode(csrPEM)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("pki: want a PEM \"CERTIFICATE REQUEST\"")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("pki: certificate request: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("pki: certificate request: %w", err)
	}
	tmpl := peerTemplate()
	tmpl.IPAddresses = csr.IPAddresses
	for _, h := range csr.DNSNames {
		if !slices.Contains(tmpl.DNSNames, h) {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, csr.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("pki: peer certificate: %w", err)
	}
	return append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), ca.CertPEM...), nil
}

// NewPeerRequest makes a key and a certificate request for a peer
// certificate for hosts (for SignPeer). It returns the request as PEM and
// the key. Errors: only from the system's random source.
func NewPeerRequest(hosts []string) (csrPEM []byte, key *ecdsa.PrivateKey, err error) {
	key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: peer key: %w", err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "cairn peer"}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: certificate request: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), key, nil
}

// peerTemplate is the template of a peer certificate, without its hosts.
func peerTemplate() *x509.Certificate {
	u, _ := url.Parse(PeerURI) // a constant that parses
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "cairn peer"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(ServingLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{PeerName},
		URIs:         []*url.URL{u},
	}
}

// VerifyPeer checks that certs (a TLS party's chain, leaf first) is a
// peer certificate of the CA in roots, for usage (server or client
// authentication). Errors: ErrNoPeerCertificate, ErrNotCairnCA (also for
// an expired certificate or one not valid for usage), ErrNotPeer.
func VerifyPeer(certs []*x509.Certificate, roots *x509.CertPool, usage x509.ExtKeyUsage) error {
	if len(certs) == 0 {
		return ErrNoPeerCertificate
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter,
		KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return fmt.Errorf("%w: %w", ErrNotCairnCA, err)
	}
	if !slices.ContainsFunc(certs[0].URIs, func(u *url.URL) bool { return u.String() == PeerURI }) {
		return ErrNotPeer
	}
	return nil
}

// Pool is a certificate pool of ca's certificate.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return pool
}

// PeerClientConfig is the TLS configuration a cairn process reaches
// another with: it asks for PeerName, accepts only a peer certificate of
// the CA in roots (not the system's roots), and presents cert, its own
// peer certificate, as its client certificate. The checks (VerifyPeer,
// whose errors the handshake's wraps) run during the handshake, before
// any request is sent. The address's host name is not checked: the peer
// certificate is the proof, and every cairn peer is trusted alike.
func PeerClientConfig(roots *x509.CertPool, cert tls.Certificate) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		ServerName:   PeerName,
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"http/1.1"},
		// Verified in VerifyConnection instead, so that its errors say
		// which check failed.
		InsecureSkipVerify: true, //nolint:gosec // VerifyConnection verifies the chain
		VerifyConnection: func(cs tls.ConnectionState) error {
			return VerifyPeer(cs.PeerCertificates, roots, x509.ExtKeyUsageServerAuth)
		},
	}
}

// PeerServerConfig is ServerConfig for a cairn process that serves its
// clients with serving and its peers (who ask for PeerName) with peer. It
// asks every client for a certificate of the CA in roots without
// requiring or checking one (a client with a certificate of its own still
// connects): the server checks a peer's with VerifyPeer where it matters.
func PeerServerConfig(serving, peer tls.Certificate, roots *x509.CertPool) *tls.Config {
	cfg := ServerConfig(serving)
	cfg.Certificates = nil
	cfg.ClientAuth = tls.RequestClientCert
	cfg.ClientCAs = roots // names the CA in the request, so that browsers offer nothing else
	cfg.GetCertificate = func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		if hello.ServerName == PeerName {
			return &peer, nil
		}
		return &serving, nil
	}
	return cfg
}

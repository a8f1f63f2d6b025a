// Package pki makes the certificates cairn serves TLS with: a certificate
// authority (created once and shared by every server of a store), and the
// serving certificates it issues for the addresses a server listens on.
// Keys are ECDSA P-256. It holds no state: callers keep the authority
// (encrypted in the store) and issue a serving certificate at each start.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"slices"
	"time"
)

// Lifetimes of what this package makes.
const (
	CALifetime      = 10 * 365 * 24 * time.Hour
	ServingLifetime = 365 * 24 * time.Hour
)

// CA is a certificate authority: its certificate and private key.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// CertPEM is Cert, PEM-encoded: what clients trust (a kubeconfig's
	// certificate-authority-data, CAIRN_CA_FILE).
	CertPEM []byte
}

// NewCA creates a certificate authority named name, valid for CALifetime.
// Errors: only from the system's random source.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Encode returns the authority as PEM: its certificate, then its key
// (PKCS #8). The result is secret.
func (ca *CA) Encode() ([]byte, error) {
	key, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		return nil, fmt.Errorf("pki: encode the CA key: %w", err)
	}
	return append(slices.Clone(ca.CertPEM), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key})...), nil
}

// DecodeCA reads what Encode wrote. Errors: a missing or malformed
// certificate or key, or a certificate that is no CA.
func DecodeCA(data []byte) (*CA, error) {
	var ca CA
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		switch block.Type {
		case "CERTIFICATE":
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("pki: CA certificate: %w", err)
			}
			ca.Cert, ca.CertPEM = cert, pem.EncodeToMemory(block)
		case "PRIVATE KEY":
			key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("pki: CA key: %w", err)
			}
			signer, ok := key.(crypto.Signer)
			if !ok {
				return nil, errors.New("pki: the CA key cannot sign")
			}
			ca.Key = signer
		}
	}
	if ca.Cert == nil || ca.Key == nil || !ca.Cert.IsCA {
		return nil, errors.New("pki: not a CA certificate and key")
	}
	return &ca, nil
}

// Issue returns a serving certificate for hosts (IP addresses or DNS
// names), signed by ca, valid for ServingLifetime, with ca's certificate
// in its chain. Errors: no hosts, or a signing failure.
func (ca *CA) Issue(hosts []string) (tls.Certificate, error) {
	if len(hosts) == 0 {
		return tls.Certificate{}, errors.New("pki: a serving certificate needs at least one host")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: serving key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(ServingLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	return ca.sign(tmpl, key, hosts, "serving certificate")
}

// sign adds hosts (IP addresses or DNS names, each once) to tmpl and
// signs it for key, returning the certificate with ca's in its chain.
// what names the certificate in errors.
func (ca *CA) sign(tmpl *x509.Certificate, key *ecdsa.PrivateKey, hosts []string, what string) (tls.Certificate, error) {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if !slices.Contains(tmpl.DNSNames, h) {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: %s: %w", what, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("pki: %s: %w", what, err)
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.Cert.Raw}, PrivateKey: key, Leaf: leaf}, nil
}

// Pool returns a certificate pool of the PEM certificates in caPEM.
// Errors: caPEM holds no certificate.
func Pool(caPEM []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("pki: no PEM certificate in the CA data")
	}
	return pool, nil
}

// ServerConfig is the TLS configuration of a server presenting cert:
// TLS 1.2 at least, HTTP/1.1 (cairn's streams rely on its connection
// deadlines).
func ServerConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
}

// Hosts are the names a server listening on listen (host:port) and
// reached at the advertised host (may be "") is known by, for its serving
// certificate: the listen host, or for a wildcard address (or none) every
// address of the machine's interfaces and its host name; always
// localhost, 127.0.0.1 and ::1.
func Hosts(listen, advertised string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	add := func(h string) {
		if h != "" && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok {
					add(n.IP.String())
				}
			}
		}
		if name, err := os.Hostname(); err == nil {
			add(name)
		}
	} else {
		add(host)
	}
	add(advertised)
	return hosts
}

// serial is a random 128-bit certificate serial number.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128)) // crypto/rand does not fail
	return n
}

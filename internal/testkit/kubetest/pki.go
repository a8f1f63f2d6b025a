package kubetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// files are what the processes read: certificates, keys and the token
// file, all mode 0600 under the cluster's directory.
type files struct {
	apiserver   string // path of the kube-apiserver binary
	caCert      string
	caPEM       []byte
	servingCert string
	servingKey  string
	saKey       string
	saPub       string
	tokens      string
	token       string // the admin token
}

// writeFiles creates a CA, the apiserver's serving certificate (for
// 127.0.0.1 and localhost), the service account key pair and a token file
// with a random admin token in group system:masters, under dir.
func writeFiles(dir string) (files, error) {
	f := files{
		caCert: filepath.Join(dir, "ca.crt"), servingCert: filepath.Join(dir, "apiserver.crt"),
		servingKey: filepath.Join(dir, "apiserver.key"), saKey: filepath.Join(dir, "sa.key"),
		saPub: filepath.Join(dir, "sa.pub"), tokens: filepath.Join(dir, "tokens.csv"),
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, fmt.Errorf("generate the CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubetest-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return f, fmt.Errorf("create the CA certificate: %w", err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	f.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, fmt.Errorf("generate the serving key: %w", err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return f, fmt.Errorf("create the serving certificate: %w", err)
	}
	srvKeyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		return f, fmt.Errorf("encode the serving key: %w", err)
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return f, fmt.Errorf("generate the service account key: %w", err)
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return f, fmt.Errorf("encode the service account key: %w", err)
	}
	tok := make([]byte, 16)
	if _, err := io.ReadFull(rand.Reader, tok); err != nil {
		return f, fmt.Errorf("generate the admin token: %w", err)
	}
	f.token = "kubetest-admin-" + hex.EncodeToString(tok)
	writes := []struct {
		path string
		data []byte
	}{
		{f.caCert, f.caPEM},
		{f.servingCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srvDER})},
		{f.servingKey, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: srvKeyDER})},
		{f.saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)})},
		{f.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})},
		{f.tokens, []byte(f.token + `,admin,admin-uid,"system:masters"` + "\n")},
	}
	for _, w := range writes {
		if err := os.WriteFile(w.path, w.data, 0o600); err != nil {
			return f, fmt.Errorf("write %s: %w", filepath.Base(w.path), err)
		}
	}
	return f, nil
}

// httpClient returns a client that trusts ca for url's host, or, for a
// process serving a self-signed certificate of its own (the controller
// manager), skips verification: the probe only asks whether it is up.
func httpClient(ca []byte, url string) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("kubetest: the CA certificate does not parse")
	}
	tc := &tls.Config{RootCAs: pool}
	if strings.HasSuffix(url, "/healthz") {
		tc = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // a readiness probe of a loopback test process
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}, nil
}

// probe GETs url with token and returns nil on 200, or why not.
func probe(ctx context.Context, c *http.Client, url, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

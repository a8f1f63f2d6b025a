package pki_test

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"slices"
	"testing"

	"cairn.dev/cairn/pki"
)

// TestVerifyPeer_OnlyPeerCertificatesOfTheCAPass: a peer certificate of
// the CA passes, whether issued here or signed for a request; a serving
// certificate of the same CA is no peer's; another CA's peer certificate
// is not cairn's.
func TestVerifyPeer_OnlyPeerCertificatesOfTheCAPass(t *testing.T) {
	ca, err := pki.NewCA("cairn")
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.NewCA("other")
	if err != nil {
		t.Fatal(err)
	}
	peer, _ := ca.IssuePeer(nil)
	serving, _ := ca.Issue([]string{"127.0.0.1"})
	foreign, _ := other.IssuePeer(nil)
	csr, _, err := pki.NewPeerRequest([]string{"127.0.0.1", "cm.example"})
	if err != nil {
		t.Fatal(err)
	}
	chainPEM, err := ca.SignPeer(csr)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := x509.ParseCertificate(pemBlock(t, chainPEM))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(signed.DNSNames, "cm.example") || !slices.Contains(signed.DNSNames, pki.PeerName) || len(signed.IPAddresses) != 1 {
		t.Errorf("signed peer certificate names %v %v, want the request's hosts and %s", signed.DNSNames, signed.IPAddresses, pki.PeerName)
	}
	for _, tc := range []struct {
		name  string
		certs []*x509.Certificate
		want  error
	}{
		{"issued peer", []*x509.Certificate{peer.Leaf}, nil},
		{"signed peer, as client", []*x509.Certificate{signed}, nil},
		{"serving certificate of the CA", []*x509.Certificate{serving.Leaf}, pki.ErrNotPeer},
		{"peer certificate of another CA", []*x509.Certificate{foreign.Leaf}, pki.ErrNotCairnCA},
		{"none", nil, pki.ErrNoPeerCertificate},
	} {
		usage := x509.ExtKeyUsageServerAuth
		if tc.name == "signed peer, as client" {
			usage = x509.ExtKeyUsageClientAuth
		}
		if err := pki.VerifyPeer(tc.certs, ca.Pool(), usage); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: VerifyPeer = %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := ca.SignPeer([]byte("not a request")); err == nil {
		t.Error("SignPeer accepted a malformed request")
	}
}

// pemBlock is the first PEM block of data.
func pemBlock(t *testing.T, data []byte) []byte {
	t.Helper()
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatal("no PEM block")
	}
	return b.Bytes
}

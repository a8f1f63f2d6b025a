package server

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/pki"
)

// Forwarding between cairn processes. A server that does not lead the
// controllers forwards a trace request to the process that does, whose
// address it reads from the controllers' Lease: an address from the
// store, so never trusted as such. The server connects over TLS asking
// for pki.PeerName, accepts only a peer certificate of cairn's CA (not the
// system's roots; checked in the handshake, before a byte of the request
// is sent), presents its own peer certificate as client certificate, and
// sends no bearer token: it asserts the caller it authenticated in
// identity.PeerHeader. A server believes that header only from a client
// whose certificate is a peer certificate of cairn's CA, and authorizes
// the asserted caller as it would the caller itself (the forwarding
// server authenticated it: its token, and a worker token's event); from
// any other client the header is ignored.

// Peer is a server's part among cairn's processes (Options.Peer).
type Peer struct {
	// CA is cairn's CA: peers' certificates are verified with its
	// certificate, and it signs peer certificates for admins
	// (api.PeerCertificatePath).
	CA *pki.CA
	// Cert is this process's own peer certificate (pki.IssuePeer): its
	// client certificate when it forwards a request. It also serves it
	// to peers (pki.PeerServerConfig on Options.TLS).
	Cert tls.Certificate
}

// client is the HTTP client of requests to peers, nil for a nil Peer.
func (p *Peer) client() *http.Client {
	if p == nil {
		return nil
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // peers are reached directly
	tr.TLSClientConfig = pki.PeerClientConfig(p.roots(), p.Cert)
	tr.ForceAttemptHTTP2 = false
	return &http.Client{Timeout: 10 * time.Second, Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// roots is a pool of cairn's CA certificate.
func (p *Peer) roots() *x509.CertPool { return p.CA.Pool() }

// peerCaller returns the caller a request asserts in identity.PeerHeader
// when its client proved, with its TLS client certificate, to be a cairn
// peer. It returns false when the request asserts none, or when it does
// but comes from anyone else (the header is then ignored, and the
// request authenticated as any other) or the header is malformed.
func (s *Server) peerCaller(r *http.Request) (identity.User, bool) {
	v := r.Header.Get(identity.PeerHeader)
	if v == "" {
		return identity.User{}, false
	}
	if s.opts.Peer == nil || r.TLS == nil {
		return identity.User{}, false
	}
	if err := pki.VerifyPeer(r.TLS.PeerCertificates, s.opts.Peer.roots(), x509.ExtKeyUsageClientAuth); err != nil {
		s.log.Debug("ignored an asserted caller from a client that is no cairn peer", "path", r.URL.Path, "err", err)
		return identity.User{}, false
	}
	u, err := identity.DecodeHeader(v)
	if err != nil {
		s.log.Warn("ignored a malformed asserted caller from a cairn peer", "path", r.URL.Path)
		return identity.User{}, false
	}
	return u, true
}

// servePeerCertificate answers POST api.PeerCertificatePath for admins:
// cairn's CA signs a peer certificate for the key of the request's CSR.
func (s *Server) servePeerCertificate(w *statusWriter, r *http.Request) {
	if u, _ := identity.From(r.Context()); !u.Admin {
		s.writeError(w, r, api.NewStatus(api.ReasonForbidden, "only an admin may obtain a peer certificate"))
		return
	}
	if r.Method != http.MethodPost {
		s.writeError(w, r, api.NewStatus(api.ReasonMethodNotAllowed, "%s takes POST", api.PeerCertificatePath))
		return
	}
	if s.opts.Peer == nil {
		s.writeError(w, r, api.NewStatus(api.ReasonUnavailable,
			"this server has no certificate authority (it serves plain HTTP): it issues no peer certificates"))
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req api.PeerCertificateRequest
	if err := json.Unmarshal(body, &req); err != nil {
		s.writeError(w, r, api.NewBadRequest("the body must be a PeerCertificateRequest {\"csr\": PEM}: %v", err))
		return
	}
	chain, err := s.opts.Peer.CA.SignPeer([]byte(req.CSR))
	if err != nil {
		s.writeError(w, r, api.NewBadRequest("csr: %v", err))
		return
	}
	s.writeJSON(w, r, http.StatusOK, api.PeerCertificate{Certificate: string(chain), CA: string(s.opts.Peer.CA.CertPEM)})
}

// checkPeerAddress refuses a leader address the server will not forward
// to: no peer setup of its own, or not an https URL.
func (s *Server) checkPeerAddress(base string) error {
	if s.forwarder == nil {
		return api.NewStatus(api.ReasonUnavailable, "this server has no peer certificate (it serves plain HTTP), so it forwards no "+
			"trace requests to the controllers' leader at %s: ask the leader directly, or run the servers with TLS", base)
	}
	u, err := url.Parse(base)
	switch {
	case err != nil || u.Host == "":
		return api.NewStatus(api.ReasonUnavailable, "the controllers' leader has an unusable address %q", base)
	case u.Scheme != "https":
		return api.NewStatus(api.ReasonUnavailable, "refused to forward to the controllers' leader at %s: it serves plain HTTP, "+
			"and trace requests are forwarded only to cairn processes proven by a peer certificate over TLS", base)
	}
	return nil
}

// peerRefusal explains why a peer connection to base failed: its
// certificate is no cairn peer's, it speaks no TLS, or it is unreachable.
func peerRefusal(base string, err error) *api.Status {
	var why string
	var header tls.RecordHeaderError
	switch {
	case errors.Is(err, pki.ErrNotPeer):
		why = "its certificate is issued by cairn's CA but is no cairn peer certificate (a serving certificate?)"
	case errors.Is(err, pki.ErrNotCairnCA):
		why = "its certificate is not issued by cairn's CA"
	case errors.Is(err, pki.ErrNoPeerCertificate):
		why = "it presented no certificate"
	case errors.As(err, &header):
		why = "it does not speak TLS"
	default:
		return unavailable(fmt.Sprintf("cannot reach the controllers' leader at %s; try again", base))
	}
	return api.NewStatus(api.ReasonUnavailable, "refused to forward to the controllers' leader at %s: %s. "+
		"Trace requests are forwarded only to cairn processes proven by a peer certificate of cairn's CA", base, why)
}

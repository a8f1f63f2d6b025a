package api

// PeerCertificatePath is where an admin asks a cairn API server for a peer
// certificate (package pki): POST a PeerCertificateRequest, get a
// PeerCertificate. A `cairn controller-manager` does so at start, so that
// API servers forward trace requests to it.
const PeerCertificatePath = "/peer-certificate"

// PeerCertificateRequest asks for a peer certificate for the key of a
// certificate request.
type PeerCertificateRequest struct {
	// CSR is a PEM "CERTIFICATE REQUEST": its key, IP addresses and DNS
	// names go into the certificate.
	CSR string `json:"csr"`
}

// PeerCertificate is a peer certificate and the CA that issued it.
type PeerCertificate struct {
	// Certificate is the PEM certificate chain, leaf first.
	Certificate string `json:"certificate"`
	// CA is the PEM certificate of cairn's CA: what peers are verified
	// with.
	CA string `json:"ca"`
}

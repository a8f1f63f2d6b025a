package daemon

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/privfile"
	"cairn.dev/cairn/pki"
	"cairn.dev/cairn/server"
)

// TLS by default: every server of a store serves HTTPS with a certificate
// issued, at each start, for its listen and advertised addresses by one
// certificate authority. The authority is created by the first server and
// kept in the store, encrypted with the servers' shared key, so that a
// client trusting it reaches any of them. Its certificate is written to
// <data dir>/ca.crt (for CAIRN_CA_FILE) and into the client config and the
// kubeconfig the server writes. With the user's own certificate
// (Options.TLSCertFile) the configs carry no CA: clients verify it with
// the system's roots. Options.InsecureHTTP serves plain HTTP. Between
// cairn's processes, peer certificates of the CA prove who is a cairn
// process (package pki, server/peer.go).

// caSecret names the authority among the store's system secrets.
const caSecret = "tls-ca"

// CAFileName is the file in the data dir that holds the CA's certificate.
const CAFileName = "ca.crt"

// setupTLS prepares the server's TLS: its configuration (nil for plain
// HTTP) and its part among cairn's processes (nil for plain HTTP: such a
// server forwards no trace requests and believes no peer). Every server
// with TLS, its own certificate or the user's, holds a peer certificate of
// the store's CA, which it serves to peers (who ask for pki.PeerName) and
// presents when it forwards a request.
func (d *Daemon) setupTLS(ctx context.Context) (serve *tls.Config, peer *server.Peer, err error) {
	o := d.opts
	if o.InsecureHTTP {
		return nil, nil, nil
	}
	ca, err := d.loadCA(ctx)
	if err != nil {
		return nil, nil, err
	}
	hosts := pki.Hosts(d.listener.Addr().String(), advertisedHost(o.AdvertiseURL))
	peerCert, err := ca.IssuePeer(hosts)
	if err != nil {
		return nil, nil, err
	}
	peer = &server.Peer{CA: ca, Cert: peerCert}
	if o.TLSCertFile != "" || o.TLSKeyFile != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCertFile, o.TLSKeyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("daemon: load the TLS certificate and key: %w", err)
		}
		return pki.PeerServerConfig(cert, peerCert, ca.Pool()), peer, nil
	}
	cert, err := ca.Issue(hosts)
	if err != nil {
		return nil, nil, err
	}
	d.caPEM = ca.CertPEM
	d.caFile = filepath.Join(o.DataDir, CAFileName)
	if err := privfile.Write(d.caFile, ca.CertPEM); err != nil {
		return nil, nil, fmt.Errorf("daemon: write %s: %w", d.caFile, err)
	}
	return pki.PeerServerConfig(cert, peerCert, ca.Pool()), peer, nil
}

// loadCA reads the store's CA, creating it when there is none yet.
func (d *Daemon) loadCA(ctx context.Context) (*pki.CA, error) {
	raw, err := d.registry.SystemSecret(ctx, caSecret, func() ([]byte, error) {
		ca, err := pki.NewCA("cairn")
		if err != nil {
			return nil, err
		}
		return ca.Encode()
	})
	if err != nil {
		return nil, fmt.Errorf("daemon: the TLS certificate authority: %w", err)
	}
	ca, err := pki.DecodeCA(raw)
	if err != nil {
		return nil, fmt.Errorf("daemon: the TLS certificate authority: %w", err)
	}
	return ca, nil
}

// advertisedHost is the host of the advertised URL, "" when there is none.
func advertisedHost(advertise string) string {
	u, err := url.Parse(advertise)
	if err != nil || u.Host == "" {
		return ""
	}
	if h, _, err := net.SplitHostPort(u.Host); err == nil {
		return h
	}
	return u.Host
}

// CA is the PEM certificate of the CA the server's certificate is issued
// by; nil for plain HTTP or the user's own certificate.
func (d *Daemon) CA() []byte { return d.caPEM }

// ClientConfig is the config a client reaches this server with, as the
// admin.
func (d *Daemon) ClientConfig() client.Config {
	return client.Config{Server: d.URL(), Token: d.token, CertificateAuthorityData: string(d.caPEM)}
}

// KubeconfigName is the kubeconfig's file name, next to the client config.
const KubeconfigName = "kubeconfig"

// writeKubeconfig writes, next to the client config, a kubeconfig with
// one context, "cairn": this server, its CA and the admin token (mode
// 0600: it holds the token). kubectl and client-go send a token over TLS
// only, so there is none for plain HTTP.
func (d *Daemon) writeKubeconfig() error {
	if d.opts.ClientConfigPath == "" || d.token == "" || d.opts.InsecureHTTP {
		return nil
	}
	path := filepath.Join(filepath.Dir(d.opts.ClientConfigPath), KubeconfigName)
	cfg := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server, cluster.CertificateAuthorityData = d.URL(), d.caPEM
	user := clientcmdapi.NewAuthInfo()
	user.Token = d.token
	ctx := clientcmdapi.NewContext()
	ctx.Cluster, ctx.AuthInfo, ctx.Namespace = "cairn", "cairn", "default"
	cfg.Clusters["cairn"], cfg.AuthInfos["cairn"], cfg.Contexts["cairn"] = cluster, user, ctx
	cfg.CurrentContext = "cairn"
	raw, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return privfile.Write(path, raw)
}

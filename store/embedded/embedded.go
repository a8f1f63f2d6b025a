// Package embedded runs a single-node etcd inside the cairn process, under
// a data directory. Only the server process needs it: clients never import
// it, so they do not link etcd's server.
package embedded

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"cairn.dev/cairn/store"
)

// Etcd is a single-node etcd running inside the cairn process.
type Etcd struct {
	etcd *embed.Etcd
	// Endpoint is the client URL other processes can reach it on.
	Endpoint string
}

// Options configures Start.
type Options struct {
	// ClientURL is where etcd listens for clients; default
	// http://127.0.0.1:0 (a free loopback port).
	ClientURL string
	// StartTimeout bounds the wait for etcd to be ready; default 60s.
	StartTimeout time.Duration
	// Quota is etcd's backend quota in bytes (its --quota-backend-bytes):
	// past it etcd raises its NOSPACE alarm and refuses every write that
	// stores data; default store.DefaultQuota.
	Quota int64
}

// Start runs etcd with its data under dir and blocks until it serves
// clients or opts.StartTimeout passes. Restarting on the same dir keeps
// every key.
func Start(dir string, opts Options) (*Etcd, error) {
	if opts.ClientURL == "" {
		opts.ClientURL = "http://127.0.0.1:0"
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	curl, err := url.Parse(opts.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("embedded: etcd client url: %w", err)
	}
	purl, _ := url.Parse("http://127.0.0.1:0")
	cfg := embed.NewConfig()
	cfg.Name = "cairn"
	cfg.Dir = filepath.Join(dir, "etcd")
	cfg.ListenClientUrls = []url.URL{*curl}
	cfg.AdvertiseClientUrls = []url.URL{*curl}
	cfg.ListenPeerUrls = []url.URL{*purl}
	cfg.AdvertisePeerUrls = []url.URL{*purl}
	cfg.InitialCluster = cfg.Name + "=" + purl.String()
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	setLimits(cfg, opts)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("embedded: start embedded etcd in %s: %w", cfg.Dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded: embedded etcd: %w", err)
	case <-time.After(opts.StartTimeout):
		e.Server.Stop()
		e.Close()
		return nil, errors.New("embedded: embedded etcd did not become ready in time")
	}
	return &Etcd{etcd: e, Endpoint: "http://" + e.Clients[0].Addr().String()}, nil
}

// Err reports a fatal error of the running etcd.
func (e *Etcd) Err() <-chan error { return e.etcd.Err() }

// Close stops etcd gracefully, flushing its data.
func (e *Etcd) Close() { e.etcd.Close() }

// setLimits sets the sizes etcd accepts: its quota and the largest request
// (store.MaxRequestBytes, which the store's client and Txn agree with).
func setLimits(cfg *embed.Config, opts Options) {
	cfg.QuotaBackendBytes = opts.Quota
	if cfg.QuotaBackendBytes <= 0 {
		cfg.QuotaBackendBytes = store.DefaultQuota
	}
	cfg.MaxRequestBytes = store.MaxRequestBytes
}

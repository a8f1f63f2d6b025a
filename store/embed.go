package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Embedded is a single-node etcd running inside the cairn process.
type Embedded struct {
	etcd *embed.Etcd
	// Endpoint is the client URL other processes can reach it on.
	Endpoint string
}

// EmbeddedOptions configures StartEmbedded.
type EmbeddedOptions struct {
	// ClientURL is where etcd listens for clients; default
	// http://127.0.0.1:0 (a free loopback port).
	ClientURL string
	// StartTimeout bounds the wait for etcd to be ready; default 60s.
	StartTimeout time.Duration
}

// StartEmbedded starts etcd with its data under dir and blocks until it
// serves clients or opts.StartTimeout passes. Restarting on the same dir
// keeps every key.
func StartEmbedded(dir string, opts EmbeddedOptions) (*Embedded, error) {
	if opts.ClientURL == "" {
		opts.ClientURL = "http://127.0.0.1:0"
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	curl, err := url.Parse(opts.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("store: etcd client url: %w", err)
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
	cfg.MaxRequestBytes = 4 << 20
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("store: start embedded etcd in %s: %w", cfg.Dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("store: embedded etcd: %w", err)
	case <-time.After(opts.StartTimeout):
		e.Server.Stop()
		e.Close()
		return nil, errors.New("store: embedded etcd did not become ready in time")
	}
	return &Embedded{etcd: e, Endpoint: "http://" + e.Clients[0].Addr().String()}, nil
}

// Err reports a fatal error of the running etcd.
func (e *Embedded) Err() <-chan error { return e.etcd.Err() }

// Close stops etcd gracefully, flushing its data.
func (e *Embedded) Close() { e.etcd.Close() }

// Dial connects a client to endpoints and checks that etcd answers.
func Dial(ctx context.Context, endpoints []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
		DialTimeout:        10 * time.Second,
		Logger:             zap.NewNop(),
		MaxCallSendMsgSize: 4 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("store: connect to etcd %v: %w", endpoints, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Get(cctx, "\x00", clientv3.WithCountOnly()); err != nil {
		cli.Close()
		return nil, fmt.Errorf("store: etcd %v does not answer: %w", endpoints, err)
	}
	return cli, nil
}

package kubetest

import (
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startEtcd runs an embedded etcd in dir with its client URL on a free
// loopback port, and returns that URL (http://127.0.0.1:PORT). It stops at
// test cleanup; one that does not start fails t.
func startEtcd(t testing.TB, dir string) string {
	t.Helper()
	listen, _ := url.Parse("http://127.0.0.1:0")
	cfg := embed.NewConfig()
	cfg.Name = "kubetest"
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{*listen}
	cfg.AdvertiseClientUrls = []url.URL{*listen}
	cfg.ListenClientHttpUrls = nil
	cfg.ListenPeerUrls = nil
	cfg.AdvertisePeerUrls = []url.URL{*listen}
	cfg.InitialCluster = cfg.Name + "=" + listen.String()
	cfg.ListenMetricsUrls = nil
	cfg.EnableGRPCGateway = false
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("kubetest: start etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("kubetest: etcd: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatalf("kubetest: etcd not ready after 60s")
	}
	return "http://" + e.Clients[0].Addr().String()
}

package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"cairn.dev/cairn/store"
)

// ClusterSize is the number of members of a Cluster.
const ClusterSize = 3

// memberStartTimeout bounds the wait for members to become ready.
const memberStartTimeout = time.Minute

// Cluster is a 3-member etcd cluster for tests: three embedded etcd
// servers in this process, each with its own data dir under t.TempDir(),
// talking to each other and to clients over loopback TCP. Members can be
// killed (stopped abruptly, as by kill -9: no leadership transfer, every
// client connection reset) and restarted on their data dir. Clients reach
// each member through a proxy of its own (proxy.go), which is what lets a
// kill cut their connections at once. Everything stops at test cleanup.
// Its methods are safe for concurrent use.
type Cluster struct {
	token   string
	initial string // the initial cluster: name=peerURL,...

	mu      sync.Mutex
	members [ClusterSize]*member
}

// member is one etcd server of a Cluster.
type member struct {
	name      string
	dir       string
	peerURL   url.URL
	clientURL url.URL // the proxy's, which clients dial
	listenURL url.URL // the member's own client listener
	proxy     *proxy
	etcd      *embed.Etcd   // nil while killed
	closed    chan struct{} // closed once a killed member's servers are closed
}

// StartCluster starts a 3-member cluster and waits until it has a leader
// and every member serves clients. It fails the test when it cannot.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	// The members' addresses must be known before they start; another
	// process may take one between the choice and the bind. Then the
	// cluster starts again on other addresses.
	var err error
	for attempt := 0; attempt < startAttempts; attempt++ {
		c := newCluster(t)
		if err = c.startAll(); err == nil {
			t.Cleanup(c.stop)
			c.WaitReady(t)
			return c
		}
		c.stop()
		if !addrInUse(err) {
			break
		}
	}
	t.Fatalf("storetest: start etcd cluster: %v", err)
	return nil
}

// addrInUse reports whether err is a bind to a taken address (etcd may
// pass it on as text).
func addrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// startAttempts bounds the starts of a cluster whose address was taken.
const startAttempts = 5

// newCluster chooses the members' addresses and data dirs.
func newCluster(t testing.TB) *Cluster {
	t.Helper()
	c := &Cluster{token: fmt.Sprintf("cairn-test-%d", time.Now().UnixNano())}
	var peers []string
	for i := range c.members {
		peer, client, listen := freeURL(t), freeURL(t), freeURL(t)
		m := &member{name: fmt.Sprintf("m%d", i), dir: filepath.Join(t.TempDir(), "etcd"), peerURL: peer,
			clientURL: client, listenURL: listen, proxy: &proxy{addr: client.Host, target: listen.Host}}
		c.members[i] = m
		peers = append(peers, m.name+"="+peer.String())
	}
	c.initial = strings.Join(peers, ",")
	return c
}

// startAll starts every member.
func (c *Cluster) startAll() error {
	for i := range c.members {
		if err := c.start(i); err != nil {
			return fmt.Errorf("member %d: %w", i, err)
		}
	}
	return nil
}

// freeURL returns an http URL on a loopback port that was free a moment
// ago (etcd's peer URLs must be known before its members start, and a
// killed member restarts on the same ones). The port is chosen below the
// kernel's ephemeral range when it can be: the ports of that range are
// handed to every listener on port 0 and every outgoing connection of
// the processes running beside the tests, so one free a moment ago is
// soon taken again, while one below it is only taken by a choice like
// this one.
func freeURL(t testing.TB) url.URL {
	t.Helper()
	lo, hi := fixedPortRange()
	for tries := 0; lo < hi && tries < 100; tries++ {
		addr := fmt.Sprintf("127.0.0.1:%d", lo+rand.IntN(hi-lo))
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			return url.URL{Scheme: "http", Host: addr}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("storetest: find a free port: %v", err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}

// fixedPortRange returns the ports freeURL chooses from: from 10000 up to
// the start of the ephemeral range (Linux's ip_local_port_range), or an
// empty range where that is not known or leaves too few.
func fixedPortRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	ephemeral, err := strconv.Atoi(f[0])
	if err != nil || ephemeral-10000 < 1000 {
		return 0, 0
	}
	return 10000, ephemeral
}

// start runs member i on its data dir. It does not wait for the member to
// be ready: a member alone cannot be, before a quorum runs.
func (c *Cluster) start(i int) error {
	c.mu.Lock()
	m := c.members[i]
	closed := m.closed
	c.mu.Unlock()
	if closed != nil {
		<-closed // the data dir is free once the killed member has closed
	}
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenPeerUrls = []url.URL{m.peerURL}
	cfg.AdvertisePeerUrls = []url.URL{m.peerURL}
	cfg.ListenClientUrls = []url.URL{m.listenURL}
	cfg.AdvertiseClientUrls = []url.URL{m.clientURL}
	cfg.ListenClientHttpUrls = nil
	cfg.ListenMetricsUrls = nil
	cfg.InitialCluster = c.initial
	cfg.InitialClusterToken = c.token
	cfg.EnableGRPCGateway = false
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.QuotaBackendBytes = store.DefaultQuota
	cfg.MaxRequestBytes = store.MaxRequestBytes
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	if err := m.proxy.open(); err != nil {
		e.Server.HardStop()
		e.Close()
		return err
	}
	c.mu.Lock()
	m.etcd, m.closed = e, nil
	c.mu.Unlock()
	return nil
}

// Endpoints returns the client URLs of every member, for store.Dial (or
// --etcd-endpoints), whether or not the member runs.
func (c *Cluster) Endpoints() []string {
	out := make([]string, 0, ClusterSize)
	for _, m := range c.members {
		out = append(out, m.clientURL.String())
	}
	return out
}

// Dial returns a store on every member (store.Dial), closed at test
// cleanup.
func (c *Cluster) Dial(t testing.TB) *store.Store {
	t.Helper()
	cli, err := store.Dial(context.Background(), c.Endpoints())
	if err != nil {
		t.Fatalf("storetest: dial the cluster: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return store.New(cli)
}

// Leader returns the index of the member that leads the cluster, as the
// running members see it, or -1 when none does.
func (c *Cluster) Leader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.members {
		if m.etcd == nil {
			continue
		}
		lead := m.etcd.Server.Leader()
		for j, o := range c.members {
			if o.etcd != nil && uint64(o.etcd.Server.MemberID()) == uint64(lead) {
				return j
			}
		}
	}
	return -1
}

// WaitLeader waits until a running member leads the cluster and returns
// its index. It fails the test after a minute.
func (c *Cluster) WaitLeader(t testing.TB) int {
	t.Helper()
	deadline := time.Now().Add(memberStartTimeout)
	for time.Now().Before(deadline) {
		if i := c.Leader(); i >= 0 {
			return i
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("storetest: the cluster elected no leader within %s", memberStartTimeout)
	return -1
}

// Running reports whether member i runs.
func (c *Cluster) Running(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[i].etcd != nil
}

// Kill stops member i abruptly: its raft node stops at once (no leadership
// transfer, nothing flushed beyond what etcd wrote already), its clients
// then lose their connections. It returns without waiting for the
// member's servers to close (Restart waits for that). Killing a member
// that is not running does nothing.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	m := c.members[i]
	e := m.etcd
	if e == nil {
		c.mu.Unlock()
		return
	}
	m.etcd = nil
	closed := make(chan struct{})
	m.closed = closed
	c.mu.Unlock()
	m.proxy.cut()
	e.Server.HardStop()
	go func() {
		defer close(closed)
		e.Close()
	}()
}

// Restart starts the killed member i again on its data dir; it rejoins the
// cluster. It does not wait for the member to be ready (WaitReady does),
// since a member cannot be while a quorum is missing.
func (c *Cluster) Restart(t testing.TB, i int) {
	t.Helper()
	if c.Running(i) {
		return
	}
	if err := c.start(i); err != nil {
		t.Fatalf("storetest: restart etcd member %d: %v", i, err)
	}
}

// WaitReady waits until every running member serves clients (which needs a
// quorum). It fails the test after a minute.
func (c *Cluster) WaitReady(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	var running []*embed.Etcd
	for _, m := range c.members {
		if m.etcd != nil {
			running = append(running, m.etcd)
		}
	}
	c.mu.Unlock()
	timeout := time.After(memberStartTimeout)
	for _, e := range running {
		select {
		case <-e.Server.ReadyNotify():
		case err := <-e.Err():
			t.Fatalf("storetest: etcd member failed: %v", err)
		case <-timeout:
			t.Fatalf("storetest: etcd members not ready within %s", memberStartTimeout)
		}
	}
	c.WaitLeader(t)
}

// stop closes every running member, and waits for killed ones to close.
func (c *Cluster) stop() {
	c.mu.Lock()
	var wait []chan struct{}
	var running []*embed.Etcd
	for _, m := range c.members {
		m.proxy.cut()
		if m.etcd != nil {
			running = append(running, m.etcd)
			m.etcd = nil
		}
		if m.closed != nil {
			wait = append(wait, m.closed)
		}
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.Server.HardStop() // no leadership transfer at cleanup
			e.Close()
		}()
	}
	wg.Wait()
	for _, ch := range wait {
		<-ch
	}
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/store"
)

// EtcdCreateShape is the workload of EtcdCreateRate: how many concurrent
// clients send how many create transactions each, of values how large.
type EtcdCreateShape struct {
	Clients, PerClient, ValueBytes int
}

// DefaultEtcdCreates is the shape every benchmark compares with: 32
// clients, 500 creates each, 300-byte values (about a small Secret's
// stored JSON, encrypted).
var DefaultEtcdCreates = EtcdCreateShape{Clients: 32, PerClient: 500, ValueBytes: 300}

// etcdBaselinePrefix is where the baseline's keys live, outside cairn's
// keyspace (registry.KeyPrefix) so that no watch of the server sees them.
const etcdBaselinePrefix = "/bench-etcd-baseline/"

// EtcdCreateRate measures etcd's own rate of small create transactions
// through cli: shape.Clients goroutines each commit shape.PerClient
// transactions If(CreateRevision(key) == 0) Then(Put(key, value)), every
// key new, under prefix; it returns the transactions committed per
// second. It then deletes the keys it wrote (one more transaction, not
// timed). It blocks until all are done; the first failed transaction,
// a create that found its key taken, or a cancelled ctx ends it with an
// error. The caller owns cli; prefix must be a key prefix no one else
// writes under.
func EtcdCreateRate(ctx context.Context, cli *clientv3.Client, prefix string, shape EtcdCreateShape) (float64, error) {
	if shape.Clients <= 0 || shape.PerClient <= 0 || shape.ValueBytes < 0 {
		return 0, fmt.Errorf("bench: EtcdCreateRate: shape %+v: Clients and PerClient must be positive", shape)
	}
	value := strings.Repeat("v", shape.ValueBytes)
	errs := make([]error, shape.Clients)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < shape.Clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = etcdCreates(ctx, cli, fmt.Sprintf("%s%d/", prefix, w), value, shape.PerClient)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if _, err := cli.Delete(ctx, prefix, clientv3.WithPrefix()); err != nil {
		return 0, fmt.Errorf("bench: EtcdCreateRate: delete the keys under %s: %w", prefix, err)
	}
	return float64(shape.Clients*shape.PerClient) / elapsed.Seconds(), nil
}

// etcdCreates commits n create transactions one after the other, keys
// prefix+0 .. prefix+n-1; it blocks until done and returns the first error.
func etcdCreates(ctx context.Context, cli *clientv3.Client, prefix, value string, n int) error {
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("%s%d", prefix, i)
		resp, err := cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, value)).
			Commit()
		if err != nil {
			return fmt.Errorf("bench: etcd create %s: %w", key, err)
		}
		if !resp.Succeeded {
			return fmt.Errorf("bench: etcd create %s: the key exists already", key)
		}
	}
	return nil
}

// etcdRate measures DefaultEtcdCreates on the embedded etcd of the server
// under test, through a client of its own dialed to the same unix socket
// the server's store uses (the same etcd, disk and fsync as the server's
// writes). run names this measurement's keys apart from earlier ones. It
// returns the transactions per second and this process's CPU time per
// transaction (etcd's and its client's).
func etcdRate(b *testing.B, d *daemon.Daemon, run string) (rate float64, cpu time.Duration) {
	b.Helper()
	ctx := context.Background()
	cli, err := store.Dial(ctx, []string{d.EtcdEndpoint()})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	cpu0 := processCPU(b)
	rate, err = EtcdCreateRate(ctx, cli, etcdBaselinePrefix+run+"/", DefaultEtcdCreates)
	if err != nil {
		b.Fatal(err)
	}
	n := DefaultEtcdCreates.Clients * DefaultEtcdCreates.PerClient
	return rate, (processCPU(b) - cpu0) / time.Duration(n)
}

// reportEtcdRatio reports etcd's own create rate measured in this run
// (etcd-txn/s) and rate as a ratio of it (ratio); and, when cpu (the
// CPU time of one write) and etcdCPU (of one of etcd's create
// transactions) are set, etcd's CPU per transaction (etcd-cpu-us/txn)
// and etcdCPU as a ratio of cpu (cpu-ratio), which a machine shared with
// other work moves less than the rates.
func reportEtcdRatio(b *testing.B, rate, etcd float64, cpu, etcdCPU time.Duration) {
	b.Helper()
	b.ReportMetric(etcd, "etcd-txn/s")
	b.ReportMetric(rate/etcd, "ratio")
	if cpu > 0 && etcdCPU > 0 {
		b.ReportMetric(float64(etcdCPU.Nanoseconds())/1e3, "etcd-cpu-us/txn")
		b.ReportMetric(float64(etcdCPU)/float64(cpu), "cpu-ratio")
	}
}

// processCPU is the CPU time (user and system) this process has used so
// far: on a machine shared with other work, the CPU a workload costs
// moves less than its wall-clock rate.
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

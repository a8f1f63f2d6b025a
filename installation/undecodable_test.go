package installation_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/installation"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/server/servertest"
	"cairn.dev/cairn/trace"
)

// An installation whose stored form does not decode (written around the
// API, which refuses it) is a terminal error: recorded in its trace and
// the reconcile metrics, not retried, and not mistaken for one that is
// gone.
func TestInstallation_UndecodableIsATerminalErrorNotRetried(t *testing.T) {
	s := servertest.Start(t)
	c := s.Client(t)
	ctx := testkit.Context(t)
	if _, err := c.Create(ctx, testkit.Object(api.KindInstallation, "default", "broken",
		testkit.Spec(`{"blueprint":{"inline":{}}}`))); err != nil {
		t.Fatal(err)
	}
	const key = "/cairn/objects/installations/default/broken"
	got, err := s.Store.Client().Get(ctx, key)
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("read %s from etcd: %v", key, err)
	}
	stored := strings.Replace(string(got.Kvs[0].Value), `"spec":{`, `"status":{"phase":5},"spec":{`, 1)
	if _, err := s.Store.Client().Put(ctx, key, stored); err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	traces := trace.NewStore(10, 100)
	m, err := manager.New(manager.Options{Client: c, Metrics: reg, Traces: traces,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Controllers: []manager.Controller{{Name: "installation", Setup: func(tm *manager.Term) error {
			return installation.Setup(tm, installation.Options{})
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(mctx) }()
	t.Cleanup(func() { cancel(); <-done })

	count := func(result string) float64 {
		n, _ := testkit.MetricSum(t, reg, "cairn_controller_reconciles_total", "name", "installation", "result", result)
		return n
	}
	testkit.Eventually(t, wait, "the undecodable installation is a terminal error", func() bool { return count("terminal_error") >= 1 })
	tr, ok := traces.Get(api.KindInstallation, "default", "broken")
	if !ok || len(tr.Reconciles) == 0 {
		t.Fatal("no trace of the undecodable installation")
	}
	last := tr.Reconciles[len(tr.Reconciles)-1]
	if !strings.HasPrefix(last.Result, "failed, not retried: ") || !strings.Contains(last.Error, "status.phase") {
		t.Fatalf("trace result %q, error %q: want a terminal failure naming the field", last.Result, last.Error)
	}
	if n := count("error"); n != 0 {
		t.Fatalf("%v reconciles failed to be retried, want none", n)
	}
}

package clitest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"cairn.dev/cairn/client"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
)

// StartDaemon runs a whole cairn server in the test process (embedded etcd
// in a new data dir under t.TempDir(), HTTP on a free loopback port, the
// controllers opts names) and returns it with an admin HTTP client. Listen, DataDir and
// Logger default to those test values, and the runtime's to RuntimeDefaults.
// It stops at test cleanup.
func StartDaemon(t testing.TB, opts daemon.Options) (*daemon.Daemon, client.Interface) {
	t.Helper()
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(t.TempDir(), "data") // t.TempDir() is 0755, which the server refuses
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	RuntimeDefaults(t, &opts)
	d, err := daemon.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop() })
	c, err := client.NewHTTP(d.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	return d, c
}

// RuntimeDefaults gives a test server with controllers a runtime dir of its
// own under t.TempDir(), which units running as users of their own can
// reach (testkit.UnitReachable), unless opts names one. When the tests do
// not run as root, units cannot get users of their own: they then run as
// the test's user (RuntimeIsolation.None).
func RuntimeDefaults(t testing.TB, opts *daemon.Options) {
	t.Helper()
	if len(opts.Controllers) == 0 {
		return
	}
	if os.Geteuid() != 0 {
		opts.RuntimeIsolation.None = true
	}
	if opts.RuntimeDir == "" {
		testkit.UnitReachable(t)
		opts.RuntimeDir = filepath.Join(t.TempDir(), "runtime")
	}
}

// RuntimeFlags are the flags that give a `cairn server` or `cairn
// controller-manager` process started by a test the runtime dir dir, which
// units running as users of their own can reach (its parent must be a
// t.TempDir() of t), instead of the machine's default; when the tests do
// not run as root, units run as the test's user (--runtime-isolation=none).
func RuntimeFlags(t testing.TB, dir string) []string {
	t.Helper()
	testkit.UnitReachable(t)
	flags := []string{"--runtime-dir", dir}
	if os.Geteuid() != 0 {
		flags = append(flags, "--runtime-isolation=none")
	}
	return flags
}

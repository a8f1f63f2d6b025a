package clitest

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"cairn.dev/cairn/client"
	"cairn.dev/cairn/daemon"
)

// StartDaemon runs a whole cairn server in the test process (embedded etcd
// in a new data dir under t.TempDir(), HTTP on a free loopback port, the
// controllers opts names) and returns it with an admin HTTP client. Listen, DataDir and
// Logger default to those test values. It stops at test cleanup.
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

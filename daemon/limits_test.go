package daemon_test

import (
	"errors"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
)

func TestDaemon_WatchCapReachesTheServer(t *testing.T) {
	d := start(t, daemon.Options{DataDir: dataDir(t), MaxWatches: 1})
	c := httpClient(t, d)
	ctx := testkit.Context(t)
	w, err := c.Watch(ctx, api.KindSecret, "default", api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := c.Watch(ctx, api.KindSecret, "default", api.ListOptions{}); !errors.Is(err, api.ErrTooManyRequests) {
		t.Fatalf("a second watch over the cap of 1: %v, want TooManyRequests", err)
	}
	// Ordinary requests are not counted with watches.
	if _, err := c.List(ctx, api.KindSecret, "default", api.ListOptions{}); err != nil {
		t.Fatal(err)
	}
}

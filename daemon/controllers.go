package daemon

import (
	"context"

	"cairn.dev/cairn/client"
	"cairn.dev/cairn/gc"
)

// controllers returns every controller the leader runs, by name. Each is
// an API client (c) and runs until its context ends. New controllers are
// added here.
func (d *Daemon) controllers(c client.Interface) map[string]func(ctx context.Context) error {
	return map[string]func(ctx context.Context) error{
		"gc": func(ctx context.Context) error {
			return gc.New(c, gc.Options{Workers: d.opts.GCWorkers, Logger: d.log,
				Metrics: d.metrics}).Run(ctx)
		},
	}
}

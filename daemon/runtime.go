package daemon

import (
	"context"
	"fmt"
	"path/filepath"

	"cairn.dev/cairn/runtime"
	rtlocal "cairn.dev/cairn/runtime/local"
)

// readyRuntime is a runtime that can be unready (the kubernetes runtime
// while its cluster does not answer).
type readyRuntime interface {
	Ready() error
}

// openRuntime returns opts.Runtime when set, and otherwise opens the local
// runtime in opts.RuntimeDir (or its default). Errors: the local runtime
// cannot be opened.
func openRuntime(opts Options, d *Daemon) (runtime.Closer, error) {
	if opts.Runtime != nil {
		return opts.Runtime, nil
	}
	dir := opts.RuntimeDir
	switch {
	case dir != "":
	case opts.RuntimeIsolation.None:
		dir = filepath.Join(opts.DataDir, "runtime")
	default:
		dir = rtlocal.DefaultRoot
	}
	rt, err := rtlocal.New(rtlocal.Options{Root: dir, Logger: d.log, Isolation: opts.RuntimeIsolation})
	if err != nil {
		return nil, fmt.Errorf("daemon: open the runtime in %s: %w", dir, err)
	}
	return rt, nil
}

// runtimeReady is /readyz's check of the runtime: nil when it has none or
// it is ready, otherwise why not.
func (d *Daemon) runtimeReady(context.Context) error {
	if r, ok := d.runtime.(readyRuntime); ok {
		if err := r.Ready(); err != nil {
			return fmt.Errorf("the runtime is not ready: %v", err)
		}
	}
	return nil
}

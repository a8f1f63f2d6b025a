package daemon

import (
	"context"
	"fmt"

	"cairn.dev/cairn/runtime"
)

// runtimeReadiness is /readyz's check of rt, for a process without a
// Daemon (the controller manager): nil when rt is ready or cannot be
// unready, otherwise why not, as the server's /readyz says it.
func runtimeReadiness(rt runtime.Closer) func(context.Context) error {
	return func(context.Context) error {
		if r, ok := rt.(readyRuntime); ok {
			if err := r.Ready(); err != nil {
				return fmt.Errorf("the runtime is not ready: %v", err)
			}
		}
		return nil
	}
}

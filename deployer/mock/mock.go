// Package mock is the deployer of the deploy item type "mock": it does no
// work but finishes each run with the phase and the exports its config
// names, after an optional delay. Its config:
//
//	phase: Succeeded   # or Failed; default Succeeded
//	export: {...}      # any JSON, published as the item's exports
//	delay: 2s          # wait this long after the pickup before finishing
//
// It keeps no state: the delay is counted from the item's
// lastReconcileTime, so a restart neither restarts nor skips it.
package mock

import (
	"context"
	"encoding/json"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer"
	"cairn.dev/cairn/manager"
)

// Type is the deploy item type this deployer handles.
const Type = "mock"

// Config is a mock deploy item's spec.config.
type Config struct {
	Phase  api.DeployPhase `json:"phase,omitempty"`
	Export json.RawMessage `json:"export,omitempty"`
	Delay  *api.Duration   `json:"delay,omitempty"`
}

// Deployer is the mock deployer. The zero value is ready; Now is its
// clock (time.Now when nil).
type Deployer struct {
	Now func() time.Time
}

// Reconcile finishes the run once the delay has passed since the pickup.
func (d Deployer) Reconcile(_ context.Context, item *deployer.Item) (deployer.Outcome, error) {
	var cfg Config
	if len(item.Spec.Config) > 0 {
		if err := json.Unmarshal(item.Spec.Config, &cfg); err != nil {
			return deployer.Failed(api.ReasonMockFailed, "spec.config does not decode as a mock config {phase, export, delay}: %v", err), nil
		}
	}
	if cfg.Delay != nil && cfg.Delay.Duration > 0 {
		now := time.Now
		if d.Now != nil {
			now = d.Now
		}
		if left := item.Status.LastReconcileTime.Add(cfg.Delay.Duration).Sub(now()); left > 0 {
			return deployer.InProgress(left), nil
		}
	}
	switch cfg.Phase {
	case "", api.DeploySucceeded:
		return deployer.Succeeded(cfg.Export), nil
	case api.DeployFailed:
		return deployer.Failed(api.ReasonMockFailed, "the mock config asks for phase Failed"), nil
	default:
		return deployer.Failed(api.ReasonMockFailed, "spec.config.phase %q is neither Succeeded nor Failed", cfg.Phase), nil
	}
}

// Abort has nothing to stop.
func (Deployer) Abort(context.Context, *deployer.Item) error { return nil }

// Delete uninstalls nothing.
func (Deployer) Delete(context.Context, *deployer.Item) (deployer.Outcome, error) {
	return deployer.Succeeded(nil), nil
}

// Setup adds the mock deployer to a manager's term.
func Setup(t *manager.Term) error {
	return deployer.Setup(t, deployer.Options{Type: Type, Deployer: Deployer{}, Stateless: true, NoUninstall: true})
}

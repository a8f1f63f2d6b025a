package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer"
)

// providerStatus is a container item's status.providerStatus: the run it
// recorded, in a fenced status write, before starting that run's unit.
type providerStatus struct {
	// Run is the unit id of the last run whose start was recorded.
	Run string `json:"run,omitempty"`
}

// startStep is what to do about a run's unit (decideStart).
type startStep int

const (
	// observeRun: the runtime has the unit; observe it.
	observeRun startStep = iota
	// startRun: record the run, then start its unit.
	startRun
	// lostRun: the run was recorded as started and the runtime has no unit
	// for it: another leader's runtime started it, or its start was cut
	// short. It is never started again: the item fails, naming the run.
	lostRun
)

// decideStart is the start decision of run id: found says whether the
// runtime has its unit, recorded is the run the item's status recorded
// as started ("" when none).
func decideStart(id, recorded string, found bool) startStep {
	switch {
	case found:
		return observeRun
	case recorded == id:
		return lostRun
	}
	return startRun
}

// recordedRun is the run item's providerStatus recorded ("" when none, or
// when it does not decode: then no start of the current run was recorded
// by this deployer).
func recordedRun(item *deployer.Item) string {
	var ps providerStatus
	if len(item.Status.ProviderStatus) == 0 || json.Unmarshal(item.Status.ProviderStatus, &ps) != nil {
		return ""
	}
	return ps.Run
}

// recordRun writes run id into item's providerStatus and records it
// (Item.Record, a fenced status write) before its unit starts. It blocks
// on the API. Errors: the write's (nothing may start then), or no Record.
func recordRun(ctx context.Context, item *deployer.Item, id string) error {
	if item.Record == nil {
		return errors.New("container: the item cannot record its run before starting it (no Item.Record)")
	}
	data, err := json.Marshal(providerStatus{Run: id})
	if err != nil {
		return err
	}
	item.Status.ProviderStatus = data
	if err := item.Record(ctx); err != nil {
		return fmt.Errorf("container: record run %s before starting it: %w", id, err)
	}
	return nil
}

// lost is the outcome of a run recorded as started that the runtime does
// not have.
func lost(id string) deployer.Outcome {
	return deployer.Failed(api.ReasonLost, "run %s was recorded as started, and this runtime has no unit for it "+
		"(another leader's runtime started it, or its start was cut short): it is not started twice; reconcile the item to run it again", id)
}

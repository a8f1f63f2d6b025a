package container

import (
	"encoding/json"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer"
)

// A run is started only when its start was not recorded; a recorded run
// the runtime does not have is lost, never started again.
func TestDecideStart_RecordedRunIsNeverStartedTwice(t *testing.T) {
	for _, tc := range []struct {
		name     string
		recorded string
		found    bool
		want     startStep
	}{
		{"nothing recorded, no unit: start", "", false, startRun},
		{"an earlier run recorded, no unit: start", "di-u-1-100", false, startRun},
		{"this run recorded, no unit: lost", "di-u-2-200", false, lostRun},
		{"this run recorded, unit here: observe", "di-u-2-200", true, observeRun},
		{"nothing recorded, unit here: observe", "", true, observeRun},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideStart("di-u-2-200", tc.recorded, tc.found); got != tc.want {
				t.Fatalf("decideStart = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestRecordedRun_ReadsTheProviderStatus(t *testing.T) {
	for _, tc := range []struct {
		ps   string
		want string
	}{
		{"", ""},
		{`{"run":"di-u-2-200"}`, "di-u-2-200"},
		{`not json`, ""},
	} {
		item := &deployer.Item{DeployItem: &api.DeployItem{Status: api.DeployItemStatus{ProviderStatus: json.RawMessage(tc.ps)}}}
		if got := recordedRun(item); got != tc.want {
			t.Errorf("recordedRun(%q) = %q, want %q", tc.ps, got, tc.want)
		}
	}
}

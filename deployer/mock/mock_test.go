package mock_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer"
	"cairn.dev/cairn/deployer/mock"
)

func TestMock_FinishesAsItsConfigSays(t *testing.T) {
	picked := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		config  string
		now     time.Duration // after the pickup
		done    bool
		phase   api.DeployPhase
		exports string
		requeue time.Duration
		err     string
	}{
		{name: "no config: Succeeded", config: ``, done: true, phase: api.DeploySucceeded},
		{name: "exports", config: `{"export":{"port":5432}}`, done: true, phase: api.DeploySucceeded, exports: `{"port":5432}`},
		{name: "Failed", config: `{"phase":"Failed"}`, done: true, phase: api.DeployFailed, err: "asks for phase Failed"},
		{name: "unknown phase", config: `{"phase":"Sideways"}`, done: true, phase: api.DeployFailed, err: `"Sideways"`},
		{name: "config that does not decode", config: `{"delay":5}`, done: true, phase: api.DeployFailed, err: "does not decode"},
		{name: "delay not over", config: `{"delay":"10s"}`, now: 4 * time.Second, requeue: 6 * time.Second},
		{name: "delay over", config: `{"delay":"10s","export":{"a":1}}`, now: 10 * time.Second, done: true, phase: api.DeploySucceeded, exports: `{"a":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := mock.Deployer{Now: func() time.Time { return picked.Add(tc.now) }}
			item := &deployer.Item{DeployItem: &api.DeployItem{Spec: api.DeployItemSpec{Type: mock.Type, Config: json.RawMessage(tc.config)},
				Status: api.DeployItemStatus{LastReconcileTime: picked}}}
			out, err := d.Reconcile(context.Background(), item)
			if err != nil {
				t.Fatal(err)
			}
			if out.Done != tc.done || out.Phase != tc.phase || string(out.Exports) != tc.exports || out.RequeueAfter != tc.requeue {
				t.Fatalf("outcome %+v, want done %v phase %s exports %s requeue %v", out, tc.done, tc.phase, tc.exports, tc.requeue)
			}
			if (out.Error != nil) != (tc.err != "") || (out.Error != nil && !strings.Contains(out.Error.Message, tc.err)) {
				t.Fatalf("error %+v, want %q", out.Error, tc.err)
			}
		})
	}
}

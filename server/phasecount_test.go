package server

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"cairn.dev/cairn/api"
)

func TestPhaseOf_ReadsEachKindsPhase(t *testing.T) {
	for _, c := range []struct {
		name, kind, status string
		phase              string
		lastError          bool
	}{
		{"status.phase", api.KindInstallation, `{"phase":"Failed","lastError":{"message":"boom"}}`, "Failed", true},
		{"an empty lastError is none", api.KindDeployItem, `{"phase":"Progressing","lastError":{"reason":"X"}}`, "Progressing", false},
		{"an event's worker phase", api.KindEvent, `{"worker":{"phase":"RUNNING"}}`, "RUNNING", false},
		{"an event without a worker phase is pending", api.KindEvent, ``, "PENDING", false},
		{"an event's status.phase is not its phase", api.KindEvent, `{"phase":"Failed","worker":{"phase":"SUCCEEDED"}}`, "SUCCEEDED", false},
		{"a reachable target", api.KindTarget, `{"conditions":[{"type":"Other","status":"False"},{"type":"Reachable","status":"True"}]}`, "Reachable", false},
		{"an unreachable target", api.KindTarget, `{"conditions":[{"type":"Reachable","status":"Unknown"}]}`, "Unreachable", false},
		{"no status", api.KindProject, ``, "", false},
		{"a status of another shape", api.KindSecret, `"text"`, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := &api.Object{TypeMeta: api.TypeMeta{Kind: c.kind}}
			if c.status != "" {
				o.SetField(api.FieldStatus, json.RawMessage(c.status))
			}
			phase, lastError := phaseOf(c.kind, o)
			if phase != c.phase || lastError != c.lastError {
				t.Errorf("phaseOf = %q, %v; want %q, %v", phase, lastError, c.phase, c.lastError)
			}
		})
	}
}

func TestPhaseTally_GroupsByNamespaceAndPhaseAndKeepsTheOldestDeletions(t *testing.T) {
	at := func(s int) *time.Time { v := time.Unix(1_800_000_000+int64(s), 0).UTC(); return &v }
	obj := func(ns, name, status string, deleted *time.Time) *api.Object {
		o := &api.Object{TypeMeta: api.TypeMeta{Kind: api.KindInstallation}}
		o.Namespace, o.Name, o.DeletionTimestamp = ns, name, deleted
		if status != "" {
			o.SetField(api.FieldStatus, json.RawMessage(status))
		}
		return o
	}
	tl := phaseTally{kind: api.KindInstallation}
	for _, o := range []*api.Object{
		obj("b", "x", `{"phase":"Succeeded"}`, nil),
		obj("a", "y", `{"phase":"Failed","lastError":{"message":"m"}}`, at(30)),
		obj("a", "z", `{"phase":"Failed"}`, nil),
		obj("a", "w", ``, at(10)),
		obj("a", "v", `{"phase":"Deleting"}`, at(20)),
	} {
		tl.add(o)
	}
	got := tl.result(2)
	want := &api.PhaseCount{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindPhaseCount},
		Counted:  api.KindInstallation,
		Groups: []api.PhaseGroup{
			{Namespace: "a", Phase: "", Count: 1},
			{Namespace: "a", Phase: "Deleting", Count: 1},
			{Namespace: "a", Phase: "Failed", Count: 2, LastError: 1},
			{Namespace: "b", Phase: "Succeeded", Count: 1},
		},
		Deleting: []api.PhaseCountObject{
			{Namespace: "a", Name: "w", DeletionTimestamp: *at(10)},
			{Namespace: "a", Name: "v", Phase: "Deleting", DeletionTimestamp: *at(20)},
		},
		DeletingOmitted: 1,
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("result\n got %s\nwant %s", g, w)
	}
	if empty := (&phaseTally{kind: api.KindEvent}).result(5); empty.Groups == nil || len(empty.Deleting) != 0 {
		t.Errorf("an empty tally: groups %v (want [] not null), deleting %v", empty.Groups, empty.Deleting)
	}
}

package controller

import (
	"encoding/json"
	"testing"
	"time"

	"cairn.dev/cairn/api"
)

func TestStatusChanged_ComparesWhatTheAPIStores(t *testing.T) {
	type status struct {
		Phase string   `json:"phase,omitempty"`
		Items []string `json:"items,omitempty"`
	}
	for _, tc := range []struct {
		name      string
		cur, next any
		want      bool
	}{
		{"same", status{Phase: "A"}, status{Phase: "A"}, false},
		{"nil and empty list store alike", status{Items: nil}, status{Items: []string{}}, false},
		{"another phase", status{Phase: "A"}, status{Phase: "B"}, true},
		{"raw as cached and typed", json.RawMessage(`{"phase":"A"}`), status{Phase: "A"}, false},
		{"raw spaced differently", json.RawMessage(`{ "phase": "A" }`), json.RawMessage(`{"phase":"A"}`), false},
		{"no status yet", json.RawMessage(nil), status{Phase: "A"}, true},
		{"does not encode", func() {}, status{}, true},
	} {
		if got := StatusChanged(tc.cur, tc.next); got != tc.want {
			t.Errorf("%s: StatusChanged = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestKeepErrorTime_OnlyForTheSameError(t *testing.T) {
	t0, t1 := time.Unix(100, 0), time.Unix(200, 0)
	cur := &api.LastError{Reason: "R", Message: "m", Time: t0}
	for _, tc := range []struct {
		name string
		next api.LastError
		want time.Time
	}{
		{"same reason and message", api.LastError{Reason: "R", Message: "m", Time: t1}, t0},
		{"another message", api.LastError{Reason: "R", Message: "n", Time: t1}, t1},
		{"another reason", api.LastError{Reason: "S", Message: "m", Time: t1}, t1},
	} {
		next := tc.next
		KeepErrorTime(cur, &next)
		if !next.Time.Equal(tc.want) {
			t.Errorf("%s: time %s, want %s", tc.name, next.Time, tc.want)
		}
	}
	KeepErrorTime(nil, &api.LastError{}) // no recorded error: nothing to keep
	KeepErrorTime(cur, nil)
}

package api_test

import (
	"testing"

	"cairn.dev/cairn/api"
)

func TestTransition_OnlyTheSeedsMovesAreAllowed(t *testing.T) {
	allowed := map[api.EventPhase][]api.EventPhase{
		api.PhasePending: {api.PhaseStarting, api.PhaseCanceled},
		api.PhaseStarting: {api.PhaseRunning, api.PhaseSucceeded, api.PhaseFailed, api.PhaseAborted,
			api.PhaseTimedOut, api.PhaseSchedulingFailed, api.PhaseUnknown},
		api.PhaseRunning: {api.PhaseSucceeded, api.PhaseFailed, api.PhaseAborted, api.PhaseTimedOut, api.PhaseUnknown},
		api.PhaseUnknown: {api.PhaseRunning, api.PhaseSucceeded, api.PhaseFailed, api.PhaseAborted, api.PhaseTimedOut},
	}
	for _, from := range api.EventPhases {
		for _, to := range api.EventPhases {
			want := from == to
			for _, p := range allowed[from] {
				want = want || p == to
			}
			if got := api.Transition(from, to); got != want {
				t.Errorf("Transition(%s, %s) = %v, want %v", from, to, got, want)
			}
		}
	}
}

func TestEventPhase_TerminalAreAllButPendingStartingRunningUnknown(t *testing.T) {
	for _, p := range api.EventPhases {
		want := p != api.PhasePending && p != api.PhaseStarting && p != api.PhaseRunning && p != api.PhaseUnknown
		if p.Terminal() != want {
			t.Errorf("%s.Terminal() = %v, want %v", p, p.Terminal(), want)
		}
		if !p.Known() {
			t.Errorf("%s is not Known", p)
		}
	}
	if api.EventPhase("DONE").Known() {
		t.Error("an unknown phase is Known")
	}
}

func TestEventSubscription_MatchesAsDesignSays(t *testing.T) {
	sub := api.EventSubscription{Source: "github", Types: []string{"push", "pr"},
		Qualifiers: map[string]string{"repo": "shop"}, Labels: map[string]string{"team": "a"}}
	any := api.EventSubscription{Source: "github", Types: []string{"*"}}
	q := map[string]string{"repo": "shop"}
	for _, tc := range []struct {
		name   string
		sub    api.EventSubscription
		source string
		typ    string
		quals  map[string]string
		labels map[string]string
		want   bool
	}{
		{"all equal", sub, "github", "push", q, map[string]string{"team": "a", "x": "y"}, true},
		{"other source", sub, "gitlab", "push", q, map[string]string{"team": "a"}, false},
		{"type not listed", sub, "github", "tag", q, map[string]string{"team": "a"}, false},
		{"qualifier differs", sub, "github", "push", map[string]string{"repo": "x"}, map[string]string{"team": "a"}, false},
		{"extra qualifier", sub, "github", "push", map[string]string{"repo": "shop", "b": "c"}, map[string]string{"team": "a"}, false},
		{"label missing", sub, "github", "push", q, nil, false},
		{"star takes any type", any, "github", "anything", nil, nil, true},
		{"star still wants equal qualifiers", any, "github", "anything", q, nil, false},
	} {
		if got := tc.sub.Match(tc.source, tc.typ, tc.quals, tc.labels); got != tc.want {
			t.Errorf("%s: Match = %v, want %v", tc.name, got, tc.want)
		}
	}
}

package commitstatus

import (
	"testing"

	"cairn.dev/cairn/api"
)

func TestState_PendingWhileRunningThenTheOutcome(t *testing.T) {
	want := map[api.EventPhase]string{
		api.PhasePending: "", api.PhaseStarting: "", api.PhaseUnknown: "", "BOGUS": "",
		api.PhaseRunning: StatePending, api.PhaseSucceeded: StateSuccess,
		api.PhaseFailed: StateFailure, api.PhaseTimedOut: StateFailure,
		api.PhaseCanceled: StateError, api.PhaseAborted: StateError, api.PhaseSchedulingFailed: StateError,
	}
	for p, s := range want {
		if got := State(p); got != s {
			t.Errorf("State(%s) = %q, want %q", p, got, s)
		}
	}
}

func TestDecide_OnlyReportingGitHubGatewaysEventsWithACommit(t *testing.T) {
	gw := func(mut func(*api.Gateway)) *api.Gateway {
		g := &api.Gateway{ObjectMeta: api.ObjectMeta{Name: "github", Namespace: "ns"}, Spec: api.GatewaySpec{Type: api.GatewayGitHub,
			Report: &api.GatewayReport{TokenSecretRef: api.SecretKeyRef{Name: "gh", Key: "token"}, APIURL: "https://ghe.example.com/api/v3"}}}
		if mut != nil {
			mut(g)
		}
		return g
	}
	ev := func(mut func(*api.Event)) *api.Event {
		e := &api.Event{ObjectMeta: api.ObjectMeta{Name: "preview-1", Namespace: "ns", Annotations: map[string]string{"cairn.dev/gateway": "github"}},
			Spec:   api.EventSpec{Project: "preview", Qualifiers: map[string]string{"repo": "octo/shop"}, Labels: map[string]string{"sha": "abc"}},
			Status: api.EventStatus{Worker: api.WorkerStatus{Phase: api.PhaseFailed, Reason: "exit code 1"}}}
		if mut != nil {
			mut(e)
		}
		return e
	}
	rep, ok := Decide(ev(nil), gw(nil), "https://cairn.example.com/ui/")
	want := Report{APIURL: "https://ghe.example.com/api/v3", TokenRef: api.SecretKeyRef{Name: "gh", Key: "token"}, Owner: "octo", Repo: "shop",
		SHA: "abc", State: StateFailure, Context: "cairn/preview", Description: "worker FAILED: exit code 1",
		TargetURL: "https://cairn.example.com/ui/namespaces/ns/events/preview-1"}
	if !ok || rep != want {
		t.Errorf("Decide = %+v, %v; want %+v", rep, ok, want)
	}
	for _, tc := range []struct {
		name string
		ev   *api.Event
		gw   *api.Gateway
	}{
		{"no gateway", ev(nil), nil},
		{"a cloudevents gateway", ev(nil), gw(func(g *api.Gateway) { g.Spec.Type = api.GatewayCloudEvents })},
		{"no report", ev(nil), gw(func(g *api.Gateway) { g.Spec.Report = nil })},
		{"another gateway's event", ev(func(e *api.Event) { e.Annotations["cairn.dev/gateway"] = "other" }), gw(nil)},
		{"no sha", ev(func(e *api.Event) { delete(e.Spec.Labels, "sha") }), gw(nil)},
		{"no repo", ev(func(e *api.Event) { e.Spec.Qualifiers = nil }), gw(nil)},
		{"pending", ev(func(e *api.Event) { e.Status.Worker.Phase = api.PhasePending }), gw(nil)},
	} {
		if rep, ok := Decide(tc.ev, tc.gw, "https://cairn.example.com/ui"); ok {
			t.Errorf("%s: Decide = %+v, want nothing to report", tc.name, rep)
		}
	}
}

package event_test

import (
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/event"
)

func TestSharesSecrets_AForksEventOnlyWithTrustForks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		trust  bool
		labels map[string]string
		want   bool
	}{
		{"not from a gateway", false, nil, true},
		{"not a fork", false, map[string]string{"fork": "false"}, true},
		{"a fork", false, map[string]string{"fork": "true"}, false},
		{"a fork, trusted", true, map[string]string{"fork": "true"}, true},
	} {
		p := &api.Project{Spec: api.ProjectSpec{TrustForks: tc.trust}}
		ev := &api.Event{Spec: api.EventSpec{Labels: tc.labels}}
		if got := event.SharesSecrets(p, ev); got != tc.want {
			t.Errorf("%s: SharesSecrets = %v, want %v", tc.name, got, tc.want)
		}
	}
}

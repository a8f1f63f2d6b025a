package session_test

import (
	"context"
	"fmt"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/session"
	"cairn.dev/cairn/client"
)

func TestResumable_ResumesTransientEndsAndStopsOnClientErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"clean end", nil, true},
		{"closed by the server", client.ErrWatchClosed, true},
		{"fell behind", api.NewStatus(api.ReasonTooManyRequests, "too slow"), true},
		{"server fault", api.NewInternal(fmt.Errorf("boom")), true},
		{"unavailable", api.NewStatus(api.ReasonUnavailable, "shutting down"), true},
		{"compacted", api.NewExpired("compacted"), false},
		{"bad token", api.NewStatus(api.ReasonUnauthorized, "no"), false},
		{"bad request", api.NewBadRequest("bad selector"), false},
		{"cancelled", context.Canceled, false},
		{"unreachable", &client.UnreachableError{URL: "http://x", Err: fmt.Errorf("refused")}, false},
	} {
		if got := session.Resumable(tc.err); got != tc.want {
			t.Errorf("%s: Resumable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

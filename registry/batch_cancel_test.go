package registry_test

import (
	"context"
	"errors"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
)

// TestUpdateStatuses_CancelledWritesFailAsTimeoutOrUnavailable: a batch
// whose caller has given up fails each write as UpdateStatuses documents,
// Timeout or ServiceUnavailable (the caller may retry), never as an
// InternalError (500).
func TestUpdateStatuses_CancelledWritesFailAsTimeoutOrUnavailable(t *testing.T) {
	r := newLimited(t).start(t, registry.Options{})
	ws := widgets(t, r, "default", 8)
	ctx, cancel := context.WithCancel(sysCtx())
	cancel()
	var objs []*api.Object
	for _, w := range ws {
		objs = append(objs, withStatus(w, `{"a":1}`))
	}
	for i, res := range r.UpdateStatuses(ctx, objs) {
		var st *api.Status
		if !errors.As(res.Err, &st) || st.Reason != api.ReasonTimeout && st.Reason != api.ReasonUnavailable {
			t.Errorf("write %d of a cancelled batch: %v, want Timeout or ServiceUnavailable", i, res.Err)
		}
	}
}

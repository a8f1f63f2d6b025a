package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// TestAPIError_MapsStoreFailures checks the one mapping of store failures
// to API errors: unavailability is a 503 with Retry-After, an unknown
// outcome a 504 that says how to find out, and no store outage is a 500.
func TestAPIError_MapsStoreFailures(t *testing.T) {
	unknownCreate := &unknownOutcome{cause: store.ErrTimeout, objects: []string{`Secret "demo/db-x2k4p"`},
		kind: "Secret", name: "db-x2k4p", requestID: "r-1"}
	cases := []struct {
		name       string
		err        error
		code       int
		retryAfter bool
		says       []string // in the message
	}{
		{"unavailable", fmt.Errorf("%w: etcdserver: no leader", store.ErrUnavailable), http.StatusServiceUnavailable, true,
			[]string{"nothing was changed", "retry"}},
		{"read past the deadline", fmt.Errorf("%w: %w", store.ErrUnavailable, context.DeadlineExceeded), http.StatusServiceUnavailable, true, nil},
		{"dry run timed out", unavailable(fmt.Errorf("%w: deadline", store.ErrTimeout)), http.StatusServiceUnavailable, true, nil},
		{"timeout", fmt.Errorf("%w: deadline", store.ErrTimeout), http.StatusGatewayTimeout, false,
			[]string{"may or may not have been applied"}},
		{"unknown outcome of a named write", &unknownOutcome{cause: store.ErrTimeout, objects: []string{`Secret "demo/db"`}, kind: "Secret", name: "db"},
			http.StatusGatewayTimeout, false, []string{"may or may not have been applied", `Read Secret "demo/db"`}},
		{"unknown outcome of a generated name", unknownCreate, http.StatusGatewayTimeout, false,
			[]string{`Read Secret "demo/db-x2k4p"`, "labelSelector=cairn.dev/request-id=r-1"}},
		{"unknown outcome of a store timeout", fmt.Errorf("commit: %w", unknownCreate), http.StatusGatewayTimeout, false, nil},
		{"not found", store.ErrNotFound, http.StatusNotFound, false, nil},
		{"precondition", store.ErrPrecondition, http.StatusConflict, false, nil},
		{"compacted", store.ErrCompacted, http.StatusGone, false, nil},
		{"future revision", store.ErrFutureRevision, http.StatusBadRequest, false, nil},
		{"no space", &store.SpaceError{}, http.StatusInsufficientStorage, false, nil},
		{"too large", &store.SizeError{Size: 10, Limit: 5}, http.StatusRequestEntityTooLarge, false, nil},
		{"other", errors.New("boom"), http.StatusInternalServerError, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := api.AsStatus(apiError(tc.err, "Secret", "db"))
			if st.Code != tc.code {
				t.Fatalf("code %d (%s: %s), want %d", st.Code, st.Reason, st.Message, tc.code)
			}
			if got := st.Details != nil && st.Details.RetryAfterSeconds > 0; got != tc.retryAfter {
				t.Errorf("Retry-After %v, want %v (%+v)", got, tc.retryAfter, st.Details)
			}
			for _, s := range tc.says {
				if !strings.Contains(st.Message, s) {
					t.Errorf("message %q does not say %q", st.Message, s)
				}
			}
			if tc.code == http.StatusGatewayTimeout && strings.Contains(tc.name, "unknown") && (st.Details == nil || st.Details.Name == "") {
				t.Errorf("details %+v, want the object named", st.Details)
			}
		})
	}
}

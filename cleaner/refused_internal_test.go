package cleaner

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
)

func TestDeletionError_NamesTheCreatorsRightApartFromOtherRefusals(t *testing.T) {
	now := time.Unix(100, 0)
	for _, tc := range []struct {
		name string
		err  error
		want api.ErrorReason
	}{
		{"the creator may not", fmt.Errorf("delete Secret/s: %w", api.NewCreatorForbidden(api.KindCleaner, api.Creator{Name: "u"}, "may not delete secrets")), api.CleanerReasonForbidden},
		{"protected", fmt.Errorf("delete Secret/s: %w", api.NewStatus(api.ReasonForbidden, "protected")), api.ReasonWriteRefused},
		{"full store", api.NewStatus(api.ReasonInsufficientStorage, "full"), api.ReasonWriteRefused},
		{"unavailable", api.NewStatus(api.ReasonUnavailable, "down"), api.CleanerReasonDeleteFailed},
		{"not an API error", errors.New("boom"), api.CleanerReasonDeleteFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			le := deletionError(tc.err, now)
			if le.Reason != tc.want || !le.Time.Equal(now) || !strings.Contains(le.Message, tc.err.Error()) {
				t.Fatalf("deletionError = %+v, want reason %s with the error", le, tc.want)
			}
		})
	}
}

package cleaner

import (
	"fmt"
	"time"

	"cairn.dev/cairn/api"
)

// deletionError is the lastError of a Cleaner whose deletions stopped at
// err, taken at now: Forbidden when its creator may not delete a target
// (api.IsCreatorForbidden); WriteRefused, with the API's reason and
// message, when the API refused the deletion for another reason a change
// elsewhere fixes (api.WriteRefused: a target under deletion protection, a
// full store); DeleteFailed otherwise.
func deletionError(err error, now time.Time) *api.LastError {
	switch {
	case api.IsCreatorForbidden(err):
		return &api.LastError{Reason: api.CleanerReasonForbidden, Message: err.Error(), Time: now}
	case api.WriteRefused(err):
		return &api.LastError{Reason: api.ReasonWriteRefused, Time: now,
			Message: fmt.Sprintf("the API refused a write (%s): %v", api.ReasonOf(err), err)}
	}
	return &api.LastError{Reason: api.CleanerReasonDeleteFailed, Message: err.Error(), Time: now}
}

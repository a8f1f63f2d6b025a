package registry

import (
	"errors"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry/internal/usage"
	"cairn.dev/cairn/store"
)

// retryAfterSeconds is what a ServiceUnavailable answer suggests waiting.
const retryAfterSeconds = 1

// apiError is the one place where a failure inside the registry becomes
// the API error its caller sees. Helpers return store errors as they come
// (the verbs' retry logic needs store.ErrPrecondition and
// store.ErrNotFound); every public method passes its failure through here,
// with the kind and name of the object concerned (name "" for a
// collection):
//
//   - an *api.Status is returned as it is;
//   - a *usage.ExceededError (a namespace limit) → Forbidden;
//   - store.ErrNotFound → NotFound; store.ErrPrecondition → Conflict;
//   - store.ErrCompacted → Gone; store.ErrFutureRevision → BadRequest;
//   - store.ErrUnavailable → ServiceUnavailable with RetryAfterSeconds;
//   - store.ErrTimeout → Timeout;
//   - store.ErrNoSpace → InsufficientStorage (507), naming the quota;
//   - store.ErrTooLarge → RequestEntityTooLarge (413), naming the limit;
//   - anything else → InternalError, which keeps err for the server's log
//     and shows the client nothing of it.
func apiError(err error, kind, name string) error {
	var st *api.Status
	var exceeded *usage.ExceededError
	var space *store.SpaceError
	var size *store.SizeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &st):
		return st
	case errors.As(err, &exceeded):
		return limitExceeded(exceeded)
	case errors.Is(err, store.ErrNotFound):
		return api.NewNotFound(kind, name)
	case errors.Is(err, store.ErrPrecondition):
		return api.NewConflict(kind, name, "the object has been modified; read it again and retry")
	case errors.Is(err, store.ErrCompacted):
		return api.NewExpired("the requested resourceVersion (or continue token) has been compacted: list again from the start")
	case errors.Is(err, store.ErrFutureRevision):
		return api.NewBadRequest("the requested resourceVersion (or continue token) is newer than the store: use one returned by the server")
	case errors.Is(err, store.ErrUnavailable):
		st = api.NewStatus(api.ReasonUnavailable, "the store is unavailable; retry")
		st.Details = &api.StatusDetails{Kind: kind, Name: name, RetryAfterSeconds: retryAfterSeconds}
		return st
	case errors.As(err, &space):
		return insufficientStorage(space, kind, name)
	case errors.As(err, &size):
		return tooLarge(size)
	case errors.Is(err, store.ErrTimeout):
		st = api.NewStatus(api.ReasonTimeout, "the store did not answer in time; the request may or may not have been applied")
		if kind != "" {
			st.Details = &api.StatusDetails{Kind: kind, Name: name}
		}
		return st
	}
	return api.NewInternal(err)
}

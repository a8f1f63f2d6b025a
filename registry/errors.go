package registry

import (
	"errors"
	"fmt"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry/internal/usage"
	"cairn.dev/cairn/store"
)

// errStaleRead is the planning of a conditional write (planUpdate) that
// found the object at another version than the write names: the read was
// stale, or the object moved. It never leaves the registry: the commit
// path (run) reads again and retries, or answers Conflict (explain).
var errStaleRead = errors.New("registry: the object read is not at the version the write names")

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
//   - store.ErrNotFound → NotFound; store.ErrPrecondition (and
//     errStaleRead, were it to leave the commit path) → Conflict;
//   - store.ErrCompacted → Gone; store.ErrFutureRevision → BadRequest;
//   - store.ErrUnavailable → ServiceUnavailable with RetryAfterSeconds
//     (nothing was changed: a read, or a write known not applied);
//   - an *unknownOutcome (a write sent to the store whose outcome is
//     unknown) → Timeout, naming the objects to read to find out;
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
	var unknown *unknownOutcome
	switch {
	case err == nil:
		return nil
	case errors.As(err, &st):
		return st
	case errors.As(err, &exceeded):
		return limitExceeded(exceeded)
	case errors.Is(err, store.ErrNotFound):
		return api.NewNotFound(kind, name)
	case errors.Is(err, store.ErrPrecondition), errors.Is(err, errStaleRead):
		return api.NewConflict(kind, name, "the object has been modified; read it again and retry")
	case errors.Is(err, store.ErrCompacted):
		return api.NewExpired("the requested resourceVersion (or continue token) has been compacted: list again from the start")
	case errors.Is(err, store.ErrFutureRevision):
		return api.NewBadRequest("the requested resourceVersion (or continue token) is newer than the store: use one returned by the server")
	case errors.As(err, &unknown):
		return unknown.status()
	case errors.Is(err, store.ErrUnavailable):
		st = api.NewUnavailable(retryAfterSeconds, "the store is unavailable (etcd has no quorum or cannot be reached): nothing was changed; retry")
		st.Details.Kind, st.Details.Name = kind, name
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

// unknownOutcome is the failure of a write whose transaction reached the
// store but whose outcome the registry could not learn before the
// operation's deadline: it may or may not have been applied.
type unknownOutcome struct {
	cause error // the store's failure (store.ErrTimeout)
	// objects are the objects the write creates, updates or deletes, as
	// `Secret "demo/db"`; the first one's kind and name go to the
	// Status's details.
	objects    []string
	kind, name string
	// requestID is the request id label of a create whose name was
	// generated ("" for none): the client finds the object by it.
	requestID string
}

func (e *unknownOutcome) Error() string {
	return fmt.Sprintf("the outcome of the write to %s is unknown: %v", strings.Join(e.objects, ", "), e.cause)
}

func (e *unknownOutcome) Unwrap() error { return e.cause }

// status is the Timeout answer of e: what may have happened and how to
// find out.
func (e *unknownOutcome) status() *api.Status {
	var b strings.Builder
	b.WriteString("the store did not confirm the write in time (etcd lost its leader or its quorum, or the connection to it): it may or may not have been applied. ")
	if len(e.objects) > 0 {
		b.WriteString("Read " + strings.Join(e.objects, ", ") + " to find out")
	}
	if e.requestID != "" {
		fmt.Fprintf(&b, "; its name was generated: it carries the label %s=%s (list with labelSelector=%s=%s)",
			api.LabelRequestID, e.requestID, api.LabelRequestID, e.requestID)
	}
	st := api.NewStatus(api.ReasonTimeout, "%s", strings.TrimSuffix(b.String(), " "))
	st.Details = &api.StatusDetails{Kind: e.kind, Name: e.name}
	return st
}

package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Reason is the machine-readable cause of a failed API call.
type Reason string

// The reasons an API call can fail with. Each maps to exactly one HTTP code
// (see Reason.Code).
const (
	ReasonNotFound      Reason = "NotFound"
	ReasonAlreadyExists Reason = "AlreadyExists"
	ReasonConflict      Reason = "Conflict"
	ReasonInvalid       Reason = "Invalid"
	ReasonBadRequest    Reason = "BadRequest"
	ReasonUnauthorized  Reason = "Unauthorized"
	ReasonForbidden     Reason = "Forbidden"
	// ReasonExpired (HTTP 410): a resourceVersion or continue token that
	// the store has compacted away; list again from the start.
	ReasonExpired          Reason = "Expired"
	ReasonTooManyRequests  Reason = "TooManyRequests"
	ReasonTooLarge         Reason = "RequestEntityTooLarge"
	ReasonMethodNotAllowed Reason = "MethodNotAllowed"
	ReasonUnsupportedMedia Reason = "UnsupportedMediaType"
	ReasonInternalError    Reason = "InternalError"
	// ReasonUnavailable (HTTP 503, with Retry-After): the store cannot
	// serve the request now; nothing was changed.
	ReasonUnavailable Reason = "ServiceUnavailable"
	// ReasonTimeout (HTTP 504): the request did not complete in time. For
	// a write whose transaction reached the store, its outcome is unknown:
	// the message says which objects to read to find out.
	ReasonTimeout Reason = "Timeout"
	// ReasonRequestTimeout: the client did not send its request body in
	// time (HTTP 408); the server closes the connection.
	ReasonRequestTimeout Reason = "RequestTimeout"
	// ReasonInsufficientStorage: the store is full; reads and deletes
	// still work.
	ReasonInsufficientStorage Reason = "InsufficientStorage"
)

// Code returns the HTTP status code of a reason. It is the one place where
// reasons become HTTP codes.
func (r Reason) Code() int {
	switch r {
	case ReasonNotFound:
		return http.StatusNotFound
	case ReasonAlreadyExists, ReasonConflict:
		return http.StatusConflict
	case ReasonInvalid:
		return http.StatusUnprocessableEntity
	case ReasonBadRequest:
		return http.StatusBadRequest
	case ReasonUnauthorized:
		return http.StatusUnauthorized
	case ReasonForbidden:
		return http.StatusForbidden
	case ReasonExpired:
		return http.StatusGone
	case ReasonTooManyRequests:
		return http.StatusTooManyRequests
	case ReasonTooLarge:
		return http.StatusRequestEntityTooLarge
	case ReasonMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case ReasonUnsupportedMedia:
		return http.StatusUnsupportedMediaType
	case ReasonUnavailable:
		return http.StatusServiceUnavailable
	case ReasonTimeout:
		return http.StatusGatewayTimeout
	case ReasonRequestTimeout:
		return http.StatusRequestTimeout
	case ReasonInsufficientStorage:
		return http.StatusInsufficientStorage
	default:
		return http.StatusInternalServerError
	}
}

// Status is the body of every failed API call, and the error type every
// layer of cairn returns for API failures. The HTTP client decodes it back,
// so errors.Is(err, api.ErrNotFound) works the same over HTTP and in-process.
type Status struct {
	TypeMeta
	Code    int            `json:"code"`
	Reason  Reason         `json:"reason"`
	Message string         `json:"message"`
	Details *StatusDetails `json:"details,omitempty"`
	// cause is the underlying failure of an InternalError: logged by the
	// server, never sent to clients.
	cause error
}

// Unwrap returns the underlying failure of an InternalError, if any.
func (s *Status) Unwrap() error { return s.cause }

// StatusDetails names the object concerned and, for Invalid, each field error.
type StatusDetails struct {
	Kind   string        `json:"kind,omitempty"`
	Name   string        `json:"name,omitempty"`
	Causes []StatusCause `json:"causes,omitempty"`
	// RetryAfterSeconds is set with TooManyRequests and ServiceUnavailable.
	RetryAfterSeconds int `json:"retryAfterSeconds,omitempty"`
}

// StatusCause is one field error: the field path, the kind of problem and
// a message that says what to fix.
type StatusCause struct {
	Field   string `json:"field"`
	Type    string `json:"reason"`
	Message string `json:"message"`
}

func (s *Status) Error() string { return s.Message }

// Is makes errors.Is match any *Status with the same reason, so the
// sentinels below can be used for checks.
func (s *Status) Is(target error) bool {
	t, ok := target.(*Status)
	return ok && t.Reason == s.Reason && t.Message == ""
}

// Sentinels for errors.Is. They carry only a reason.
var (
	ErrNotFound        = &Status{Reason: ReasonNotFound}
	ErrAlreadyExists   = &Status{Reason: ReasonAlreadyExists}
	ErrConflict        = &Status{Reason: ReasonConflict}
	ErrInvalid         = &Status{Reason: ReasonInvalid}
	ErrBadRequest      = &Status{Reason: ReasonBadRequest}
	ErrUnauthorized    = &Status{Reason: ReasonUnauthorized}
	ErrForbidden       = &Status{Reason: ReasonForbidden}
	ErrExpired         = &Status{Reason: ReasonExpired}
	ErrTooManyRequests = &Status{Reason: ReasonTooManyRequests}
	ErrInternal        = &Status{Reason: ReasonInternalError}
	// ErrInsufficientStorage: the store is full (HTTP 507).
	ErrInsufficientStorage = &Status{Reason: ReasonInsufficientStorage}
)

// ReasonOf returns the reason of an API error, ReasonInternalError for any
// other non-nil error, and "" for nil.
func ReasonOf(err error) Reason {
	if err == nil {
		return ""
	}
	var s *Status
	if errors.As(err, &s) {
		return s.Reason
	}
	return ReasonInternalError
}

// AsStatus converts any error into the Status sent to clients. Errors that
// are not API errors become a generic InternalError whose message does not
// leak internals.
func AsStatus(err error) *Status {
	var s *Status
	if errors.As(err, &s) {
		c := *s
		c.APIVersion, c.Kind = "v1", "Status"
		if c.Code == 0 {
			c.Code = c.Reason.Code()
		}
		return &c
	}
	return &Status{TypeMeta: TypeMeta{APIVersion: "v1", Kind: "Status"}, Code: 500,
		Reason: ReasonInternalError, Message: "internal error"}
}

// NewStatus builds an API error with a formatted message.
func NewStatus(reason Reason, format string, args ...any) *Status {
	return &Status{Code: reason.Code(), Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func withDetails(s *Status, kind, name string) *Status {
	s.Details = &StatusDetails{Kind: kind, Name: name}
	return s
}

// NewNotFound reports that kind/name does not exist.
func NewNotFound(kind, name string) *Status {
	return withDetails(NewStatus(ReasonNotFound, "%s %q not found", kind, name), kind, name)
}

// NewAlreadyExists reports a create of a name that is taken.
func NewAlreadyExists(kind, name string) *Status {
	return withDetails(NewStatus(ReasonAlreadyExists, "%s %q already exists", kind, name), kind, name)
}

// NewConflict reports a write that lost a race or failed a precondition.
func NewConflict(kind, name, why string) *Status {
	return withDetails(NewStatus(ReasonConflict,
		"operation on %s %q failed: %s", kind, name, why), kind, name)
}

// NewBadRequest reports a request that cannot be understood.
func NewBadRequest(format string, args ...any) *Status {
	return NewStatus(ReasonBadRequest, format, args...)
}

// NewUnavailable reports a service the server depends on (the store) that
// cannot serve the request now (HTTP 503): nothing was changed, and the
// client may retry after retryAfter seconds (the Retry-After header).
func NewUnavailable(retryAfter int, format string, args ...any) *Status {
	s := NewStatus(ReasonUnavailable, format, args...)
	s.Details = &StatusDetails{RetryAfterSeconds: retryAfter}
	return s
}

// LabelRequestID is the label the server puts on an object created with a
// generated name (metadata.generateName) through the API: the id of the
// create request (its X-Request-Id header, or one the server chose and
// returned in that header). A client that got no answer, or a Timeout (504)
// saying the create may have been applied, finds the object by it:
// labelSelector=cairn.dev/request-id=<id>.
const LabelRequestID = "cairn.dev/request-id"

// NewForbidden reports an operation that is not allowed.
func NewForbidden(kind, name, why string) *Status {
	return withDetails(NewStatus(ReasonForbidden, "%s %q is forbidden: %s", kind, name, why), kind, name)
}

// NewExpired reports a resource version or continue token that is no
// longer available (HTTP 410, reason Expired).
func NewExpired(format string, args ...any) *Status { return NewStatus(ReasonExpired, format, args...) }

// NewInternal wraps an unexpected failure. Clients see only a generic
// message; the failure itself is kept for the server's log (Unwrap).
func NewInternal(err error) *Status {
	s := NewStatus(ReasonInternalError, "internal error: see the server log")
	s.cause = err
	return s
}

// LogValue describes an error for a log line: an InternalError with its
// underlying failure, any other error as it is.
func LogValue(err error) string {
	var s *Status
	if errors.As(err, &s) && s.cause != nil {
		return s.Message + ": " + s.cause.Error()
	}
	return err.Error()
}

// NewInvalid reports field errors on kind/name (HTTP 422).
func NewInvalid(kind, name string, errs field.ErrorList) *Status {
	causes := make([]StatusCause, 0, len(errs))
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		causes = append(causes, StatusCause{Field: e.Field, Type: string(e.Type), Message: e.ErrorBody()})
		msgs = append(msgs, e.Error())
	}
	s := NewStatus(ReasonInvalid, "%s %q is invalid: %s", kind, name, strings.Join(msgs, "; "))
	s.Details = &StatusDetails{Kind: kind, Name: name, Causes: causes}
	return s
}

// Package client is cairn's Go API client. Interface has one method per API
// operation and two implementations that behave alike: NewHTTP talks to a
// cairn server over its HTTP API; package client/local calls a registry in
// the same process (what controllers inside `cairn server` use), so that
// this package never links the registry or the store. For[T] wraps either
// with typed objects.
//
// Errors are *api.Status values in both implementations, so callers check
// them with errors.Is(err, api.ErrNotFound), api.ErrConflict, api.ErrExpired,
// ... whatever the transport. The HTTP client adds two errors of its own: an
// *UnreachableError when no server answers, and an Unauthorized Status whose
// message says where the rejected token came from.
package client

import (
	"context"
	"io"
	"net/url"

	"cairn.dev/cairn/api"
)

// Interface is the cairn API. Every method blocks until the server (or the
// registry) has answered, and gives up with ctx's error when ctx is done
// first. kind is a kind name ("Secret"); plurals ("secrets") and short names
// are accepted too. An unknown kind is NotFound.
type Interface interface {
	// Create stores a new object; obj's kind and namespace say where. An
	// empty name with metadata.generateName set gets a generated name.
	// Errors: AlreadyExists, Invalid (field errors), BadRequest, NotFound
	// (the namespace does not exist), Forbidden (the namespace or an owner
	// is being deleted).
	Create(ctx context.Context, obj *api.Object) (*api.Object, error)
	// Get reads one object. ns is "" for cluster-scoped kinds.
	// Errors: NotFound.
	Get(ctx context.Context, kind, ns, name string) (*api.Object, error)
	// List reads the objects of a kind in ns ("" for every namespace),
	// filtered by opts.LabelSelector and paged by opts.Limit/Continue. The
	// list's ResourceVersion is where a watch can start missing nothing.
	// Without a limit the whole list is returned (over HTTP it is read in
	// pages of ListChunkSize, so no single response is huge).
	// Errors: BadRequest (bad selector, negative limit), Gone (an expired
	// continue token: list again from the start).
	List(ctx context.Context, kind, ns string, opts api.ListOptions) (*api.List, error)
	// Update replaces an object's main resource (status is kept). A
	// resourceVersion that is not current fails with Conflict; an update
	// leaving a deleting object without finalizers removes it.
	// Errors: NotFound, Conflict, Invalid, BadRequest, Forbidden.
	Update(ctx context.Context, obj *api.Object) (*api.Object, error)
	// UpdateStatus replaces only the status of an object.
	// Errors: NotFound, Conflict, Invalid, BadRequest.
	UpdateStatus(ctx context.Context, obj *api.Object) (*api.Object, error)
	// Patch applies a JSON merge patch to the main resource, or to the
	// status when status is true.
	// Errors: NotFound, Conflict, Invalid, BadRequest (a patch that is not
	// a JSON object).
	Patch(ctx context.Context, kind, ns, name string, patch []byte, status bool) (*api.Object, error)
	// Delete marks an object for deletion and returns it with gone false
	// while finalizers remain, or removes it and returns gone true (with
	// opts.Force, which only admins may use over HTTP).
	// Errors: NotFound, Conflict (a precondition failed), Forbidden.
	Delete(ctx context.Context, kind, ns, name string, opts api.DeleteOptions) (obj *api.Object, gone bool, err error)
	// Watch streams the changes of a kind in ns ("" for every namespace).
	// With opts.ResourceVersion "" or "0" the current objects come first
	// as ADDED; with a version N every change after N is replayed. BOOKMARK
	// events advance the version without a change. The watch lives until
	// ctx is done or Stop is called; a failure later ends the stream and
	// Watcher.Err reports it.
	// Errors (at once or from Err): Gone when N has been compacted away
	// (list again and watch from the list's version), BadRequest,
	// TooManyRequests (at once: the server's cap on open watches, retry
	// later; from Err: the watcher fell too far behind the changes, watch
	// again from the last resourceVersion received).
	Watch(ctx context.Context, kind, ns string, opts api.ListOptions) (api.Watcher, error)
	// Kinds lists the kinds the server serves, for discovery and printing.
	Kinds(ctx context.Context) ([]api.KindInfo, error)
	// Action calls a kind-specific endpoint (an event's cancel, jobs, ...)
	// and returns the response body, usually JSON.
	// Errors: whatever the action returns; NotFound for an unknown action.
	Action(ctx context.Context, req ActionRequest) ([]byte, error)
	// ActionStream calls a kind-specific endpoint that streams its answer
	// (logs with follow) and returns the body as it arrives. The caller
	// must Close it; closing it or cancelling ctx ends the call. Errors
	// from the action before the stream starts are returned at once.
	ActionStream(ctx context.Context, req ActionRequest) (io.ReadCloser, error)
}

// ActionRequest addresses one call of a kind-specific endpoint:
// METHOD .../{plural}/{Name}/{Action}, or with Name empty (a collection
// action) METHOD .../{plural}/{Action}.
type ActionRequest struct {
	// Method is the HTTP method; default POST.
	Method    string
	Kind      string
	Namespace string
	// Name is empty for collection actions.
	Name   string
	Action string
	Query  url.Values
	// Body is sent as JSON.
	Body []byte
}

// HTTPMethod is the request's method: Method, or POST when it is unset.
func (r ActionRequest) HTTPMethod() string {
	if r.Method == "" {
		return "POST"
	}
	return r.Method
}

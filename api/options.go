package api

import "encoding/json"

// ListOptions select and page a list, or start a watch.
type ListOptions struct {
	// LabelSelector filters by labels: "k=v,k!=v,k in (a,b),k,!k".
	LabelSelector string
	// Limit caps the items of one page; 0 means no limit. Negative is invalid.
	Limit int64
	// Continue is the token of the previous page's ListMeta.Continue.
	Continue string
	// ResourceVersion (watch only): replay every change after it; "" or "0"
	// first sends the current objects as ADDED.
	ResourceVersion string
}

// DeleteOptions qualify a DELETE.
type DeleteOptions struct {
	// Force drops every finalizer and removes the object at once (admin only
	// over HTTP). Dependents are then collected as orphans.
	Force bool
	// Preconditions, when set, must match the stored object or the delete
	// fails with Conflict.
	Preconditions Preconditions
}

// Preconditions guard a write against acting on another incarnation or
// version of an object.
type Preconditions struct {
	UID             string `json:"uid,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// ObjectEvent is one decoded watch event. For BOOKMARK, Object carries only
// metadata.resourceVersion.
type ObjectEvent struct {
	Type   string
	Object *Object
	// Raw is Object's JSON (what json.Marshal gives), shared by every
	// watcher that receives the event and encoded once for all of them:
	// read-only. It is nil when no one has encoded it (marshal Object
	// then). Only the registry's shared watch cache sets it.
	Raw json.RawMessage
}

// Watcher is a stream of watch events.
type Watcher interface {
	// Events returns the stream. It is closed when the watch ends: after
	// Stop, when the context given to Watch is done, or on failure.
	Events() <-chan ObjectEvent
	// Err blocks until the stream is closed and tells why it ended: nil
	// after Stop or context cancellation, an error matching ErrGone when the
	// requested resource version is compacted away, another error otherwise.
	Err() error
	// Stop ends the watch and releases its resources; it is idempotent.
	Stop()
}

// KindInfo describes one kind for discovery: how to address it and how to
// print it.
type KindInfo struct {
	Kind       string   `json:"kind"`
	Plural     string   `json:"plural"`
	Namespaced bool     `json:"namespaced"`
	ShortNames []string `json:"shortNames,omitempty"`
	Columns    []Column `json:"columns,omitempty"`
	// Subresources names the extra endpoints of the kind ("status", ...).
	Subresources []string `json:"subresources,omitempty"`
	// Sensitive names the top-level fields whose values are secret
	// ("data", "stringData" of a Secret). Printers and `describe` show
	// their keys and sizes, never their values.
	Sensitive []string `json:"sensitive,omitempty"`
}

// Column is a printer column of `cairn get`.
type Column struct {
	Name string `json:"name"`
	// Path is a dotted path into the object, e.g. ".status.phase".
	Path string `json:"path"`
	// Format: "" (as is), "age" (time since a timestamp), "count" (length
	// of a list or map).
	Format string `json:"format,omitempty"`
	// Wide columns only show with -o wide.
	Wide bool `json:"wide,omitempty"`
}

// Discovery is the body of GET /apis/cairn.dev/v1alpha1.
type Discovery struct {
	TypeMeta
	Kinds []KindInfo `json:"kinds"`
}

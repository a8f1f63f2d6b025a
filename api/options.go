package api

import "encoding/json"

// ListOptions select and page a list, or start a watch.
type ListOptions struct {
	// LabelSelector filters by labels: "k=v,k!=v,k in (a,b),k,!k".
	LabelSelector string
	// FieldSelector filters by metadata.name and metadata.namespace:
	// "metadata.name=web", "metadata.namespace!=dev", joined by commas.
	// Any other field is BadRequest.
	FieldSelector string
	// Limit caps the items of one page; 0 means no limit. Negative is invalid.
	Limit int64
	// Continue is the token of the previous page's ListMeta.Continue.
	Continue string
	// ResourceVersion: for a watch, replay every change after it ("" or
	// "0": the current objects first, as ADDED). For a list, with
	// ResourceVersionMatch Exact, read the list as it was at that version
	// (Expired once compacted); otherwise a list is read at the latest
	// version, which is never older than any version given.
	ResourceVersion string
	// ResourceVersionMatch is "", NotOlderThan or Exact (lists only).
	ResourceVersionMatch string
	// SendInitialEvents (watches only) chooses whether a watch starts
	// with the current objects as ADDED: nil does so for a
	// ResourceVersion of "" or "0" only; true does so whatever the
	// version and ends them with a BOOKMARK annotated
	// InitialEventsEndAnnotation; false never does (a watch from "" then
	// starts at the latest version).
	SendInitialEvents *bool
}

// InitialEventsEndAnnotation marks the BOOKMARK that ends the initial
// events of a watch with SendInitialEvents, as Kubernetes does.
const InitialEventsEndAnnotation = "k8s.io/initial-events-end"

// Deletion propagation policies (DeleteOptions.PropagationPolicy).
const (
	// PropagationForeground: the object stays, marked, until the garbage
	// collector has deleted its dependents (cairn's cascade-deletion).
	// The default.
	PropagationForeground = "Foreground"
	// PropagationBackground: the object goes at once (once its other
	// finalizers are done); the collector then deletes its dependents as
	// orphans.
	PropagationBackground = "Background"
	// PropagationOrphan: the collector removes the references to the
	// object from its dependents, which stay, then the object goes.
	PropagationOrphan = "Orphan"
)

// FinalizerOrphan is the finalizer of an object deleted with
// PropagationOrphan: the garbage collector removes it once no dependent
// refers to the object any more.
const FinalizerOrphan = "cairn.dev/orphan"

// DeleteOptions qualify a DELETE.
type DeleteOptions struct {
	// Force drops every finalizer and removes the object at once (admin only
	// over HTTP). Dependents are then collected as orphans.
	Force bool
	// Preconditions, when set, must match the stored object or the delete
	// fails with Conflict.
	Preconditions Preconditions
	// PropagationPolicy is what becomes of the object's dependents: one of
	// the Propagation constants; "" is PropagationForeground. It only
	// matters for a live object: deleting an object already marked changes
	// nothing.
	PropagationPolicy string
	// DryRun checks and admits the deletion and returns the object as it
	// would be, writing nothing.
	DryRun bool
}

// WriteOptions qualify a create, an update or a patch. The zero value is
// a plain write.
type WriteOptions struct {
	// DryRun runs every check and admission step of the write and returns
	// the object as it would be stored, writing nothing: a create's
	// resourceVersion is then empty, an update's the current one.
	DryRun bool
	// FieldManager names the writer in metadata.managedFields (defaults
	// to the kind of write when empty). Required for an apply patch.
	FieldManager string
	// Force (apply patches only) takes over fields another manager owns
	// instead of failing with Conflict.
	Force bool
	// PatchType (patches only) is how the patch reads: MergePatch (the
	// default), JSONPatch or ApplyPatch.
	PatchType PatchType
}

// PatchType is the media type of a patch.
type PatchType string

// The patch types cairn applies (strategic merge patches are
// Kubernetes' built-in kinds' own and not served).
const (
	MergePatch PatchType = "application/merge-patch+json"
	JSONPatch  PatchType = "application/json-patch+json"
	ApplyPatch PatchType = "application/apply-patch+yaml"
)

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
	// after Stop or context cancellation, an error matching ErrExpired when the
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
	// Categories group kinds for `kubectl get CATEGORY`: every kind is in
	// "cairn"; the kinds users work with day to day also in "all".
	Categories []string `json:"categories,omitempty"`
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
	// Path is a dotted path into the object, e.g. ".status.phase". A
	// part met at a list of objects picks the object whose "type" is that
	// part, as conditions are kept: ".status.conditions.Reachable.status".
	Path string `json:"path"`
	// Format: "" (as is), "age" (time since a timestamp), "count" (length
	// of a list or map).
	Format string `json:"format,omitempty"`
	// Wide columns only show with -o wide.
	Wide bool `json:"wide,omitempty"`
}

// KindListMediaType is the Accept header that asks GET
// /apis/cairn.dev/v1alpha1 for cairn's discovery (Discovery, with the
// printer columns and sensitive fields cairn's clients need) rather than
// the Kubernetes APIResourceList served by default.
const KindListMediaType = "application/json;as=KindList;g=" + Group + ";v=" + Version

// Discovery is the body of GET /apis/cairn.dev/v1alpha1 asked for with
// KindListMediaType.
type Discovery struct {
	TypeMeta
	Kinds []KindInfo `json:"kinds"`
}

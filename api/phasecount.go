package api

import "time"

// KindPhaseCount is the kind of a PhaseCount answer.
const KindPhaseCount = "PhaseCount"

// PhaseCountMediaType is the Accept header that asks a collection (GET
// .../{plural}, in one namespace or across all) for a PhaseCount instead
// of a list, as "as=Table" asks for a Table. The request is a list in
// every other way: authorized as one, with the same labelSelector and
// fieldSelector; limit and continue are refused (every object is counted).
const PhaseCountMediaType = "application/json;as=" + KindPhaseCount + ";g=" + Group + ";v=" + Version

// MaxPhaseCountDeleting caps PhaseCount.Deleting.
const MaxPhaseCountDeleting = 1000

// PhaseCount is how many objects of a collection are in each phase, by
// namespace, at one resourceVersion: what an overview shows without
// reading every object. A watch of the same collection from
// Metadata.ResourceVersion misses no change after it.
type PhaseCount struct {
	TypeMeta `json:",inline"`
	Metadata ListMeta `json:"metadata"`
	// Counted is the kind counted ("Installation").
	Counted string `json:"counted"`
	// Groups holds one entry per namespace and phase with at least one
	// object, sorted by namespace then phase.
	Groups []PhaseGroup `json:"groups"`
	// Deleting are the objects being deleted (deletionTimestamp set), at
	// most MaxPhaseCountDeleting of them, the oldest deletions first;
	// DeletingOmitted counts those beyond.
	Deleting        []PhaseCountObject `json:"deleting,omitempty"`
	DeletingOmitted int                `json:"deletingOmitted,omitempty"`
}

// PhaseGroup counts the objects of one namespace in one phase. Phase is
// the object's status.phase; an Event's is status.worker.phase (PENDING
// until its worker has one); a Target's is Reachable or Unreachable, from
// its Reachable condition; "" for an object without any.
type PhaseGroup struct {
	Namespace string `json:"namespace,omitempty"`
	Phase     string `json:"phase"`
	Count     int    `json:"count"`
	// LastError counts those whose status.lastError has a message.
	LastError int `json:"lastError,omitempty"`
}

// PhaseCountObject is one object of a PhaseCount, with what it counts
// as.
type PhaseCountObject struct {
	Namespace         string    `json:"namespace,omitempty"`
	Name              string    `json:"name"`
	Phase             string    `json:"phase"`
	LastError         bool      `json:"lastError,omitempty"`
	DeletionTimestamp time.Time `json:"deletionTimestamp"`
}

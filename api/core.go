package api

import "k8s.io/apimachinery/pkg/api/resource"

// Namespace groups objects; deleting it deletes everything in it.
type Namespace struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       NamespaceSpec   `json:"spec,omitzero"`
	Status     NamespaceStatus `json:"status,omitzero"`
}

// NamespaceSpec is the desired state of a Namespace.
type NamespaceSpec struct {
	// Limits bound what the namespace may hold; a limit left unset is the
	// server's default (flags of `cairn server`).
	Limits *NamespaceLimits `json:"limits,omitempty"`
}

// NamespaceLimits bound the objects of a namespace, of every namespaced
// kind together. A write that would take the namespace over one is
// refused (Forbidden); deletes and writes that shrink always pass, so a
// limit may be set below what the namespace holds.
type NamespaceLimits struct {
	// Objects is the most objects the namespace may hold.
	Objects *int64 `json:"objects,omitempty"`
	// Bytes is the most bytes the objects' stored encodings may take
	// together: an integer, or a quantity such as "256Mi".
	Bytes *resource.Quantity `json:"bytes,omitempty"`
}

// NamespacePhase is the lifecycle phase of a Namespace.
type NamespacePhase string

// Namespace phases.
const (
	NamespaceActive      NamespacePhase = "Active"
	NamespaceTerminating NamespacePhase = "Terminating"
)

// NamespaceStatus is the observed state of a Namespace.
type NamespaceStatus struct {
	Phase NamespacePhase `json:"phase,omitempty"`
	// Usage is what the namespace holds, as the server that answered a get
	// of the Namespace counts it. It is filled on that read and never
	// stored; a status write drops it.
	Usage *NamespaceUsage `json:"usage,omitempty"`
}

// NamespaceUsage is a server's count of what a namespace holds, and the
// limits in force.
type NamespaceUsage struct {
	// Objects is the number of objects in the namespace.
	Objects int64 `json:"objects"`
	// Bytes is the size of their stored encodings.
	Bytes int64 `json:"bytes"`
	// Limits are the limits in force: spec.limits, with the server's
	// defaults for what it leaves unset. A limit absent here is none.
	Limits NamespaceLimits `json:"limits,omitzero"`
	// ObservedRevision is the store revision up to which the counting
	// server has seen every write (its own writes count at once).
	ObservedRevision string `json:"observedRevision,omitempty"`
}

// DefaultNamespace exists from the first start and cannot be deleted.
const DefaultNamespace = "default"

// Secret holds sensitive values. Both data and stringData are encrypted at
// rest; stringData is write-only and merged into data on every write.
type Secret struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	// Type is a free-form hint for consumers ("Opaque" by default).
	Type string `json:"type,omitempty"`
	// Data maps keys to values, base64-encoded on the wire.
	Data map[string][]byte `json:"data,omitempty"`
	// StringData maps keys to plain values; never returned by reads.
	StringData map[string]string `json:"stringData,omitempty"`
}

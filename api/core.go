package api

// Namespace groups objects; deleting it deletes everything in it.
type Namespace struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Status     NamespaceStatus `json:"status,omitzero"`
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

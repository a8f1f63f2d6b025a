// Package api holds cairn's wire types: object metadata, the generic object
// envelope, lists, watch events and the Status error. It is imported by the
// server and by clients alike and never imports server-side packages.
package api

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Group, Version and APIVersion name cairn's single API group.
const (
	Group      = "cairn.dev"
	Version    = "v1alpha1"
	APIVersion = Group + "/" + Version
	// BasePath is the HTTP path prefix of every resource endpoint.
	BasePath = "/apis/" + APIVersion
)

// FinalizerCascadeDeletion is appended by DELETE to every live object; the
// garbage collector removes it once the object has no dependents left.
const FinalizerCascadeDeletion = "cairn.dev/cascade-deletion"

// TypeMeta names the kind of a serialized object.
type TypeMeta struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// GetTypeMeta gives access to the type metadata of any object embedding it.
func (t *TypeMeta) GetTypeMeta() *TypeMeta { return t }

// ObjectMeta is the metadata every object carries. Fields marked server-set
// are ignored (or checked for consistency) on writes.
type ObjectMeta struct {
	Name         string `json:"name,omitempty"`
	GenerateName string `json:"generateName,omitempty"`
	Namespace    string `json:"namespace,omitempty"`
	// UID is server-set at creation and never changes.
	UID string `json:"uid,omitempty"`
	// ResourceVersion is the etcd mod revision of the stored object, as a
	// decimal string. It is opaque to clients.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Generation is 1 at creation and grows by one on every change of the
	// object's desired state (everything but metadata and status).
	Generation        int64     `json:"generation,omitempty"`
	CreationTimestamp time.Time `json:"creationTimestamp,omitzero"`
	// DeletionTimestamp is set by DELETE and is irreversible.
	DeletionTimestamp *time.Time        `json:"deletionTimestamp,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Annotations       map[string]string `json:"annotations,omitempty"`
	Finalizers        []string          `json:"finalizers,omitempty"`
	OwnerReferences   []OwnerReference  `json:"ownerReferences,omitempty"`
	// ManagedFields records which field manager set which fields, for
	// server-side apply (as in Kubernetes). It is server-maintained: a
	// write may clear it (an empty list) but not set entries of its own.
	ManagedFields []metav1.ManagedFieldsEntry `json:"managedFields,omitempty"`
}

// OwnerReference points at an object in the same namespace that owns this
// one. Every namespaced object is also implicitly owned by its Namespace.
type OwnerReference struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	// Controller marks the owner that manages this dependent: while that
	// owner holds finalizers besides cascade-deletion, the garbage collector
	// leaves the dependent to it.
	Controller bool `json:"controller,omitempty"`
	// BlockOwnerDeletion is Kubernetes' request that a foreground deletion
	// of the owner wait for this dependent (controller-runtime's
	// SetControllerReference sets it). It is kept as written; cairn's
	// foreground deletion waits for every dependent, whatever it says.
	BlockOwnerDeletion bool `json:"blockOwnerDeletion,omitempty"`
}

// GetObjectMeta gives access to the metadata of any object embedding it.
func (m *ObjectMeta) GetObjectMeta() *ObjectMeta { return m }

// Deleting reports whether DELETE has marked the object.
func (m *ObjectMeta) Deleting() bool { return m.DeletionTimestamp != nil }

// HasFinalizer reports whether f is among the object's finalizers.
func (m *ObjectMeta) HasFinalizer(f string) bool { return slices.Contains(m.Finalizers, f) }

// RemoveFinalizer drops f from the finalizers and reports whether it was there.
func (m *ObjectMeta) RemoveFinalizer(f string) bool {
	i := slices.Index(m.Finalizers, f)
	if i < 0 {
		return false
	}
	m.Finalizers = slices.Delete(slices.Clone(m.Finalizers), i, i+1)
	return true
}

// AddFinalizer appends f unless present and reports whether it was added.
func (m *ObjectMeta) AddFinalizer(f string) bool {
	if m.HasFinalizer(f) {
		return false
	}
	m.Finalizers = append(slices.Clone(m.Finalizers), f)
	return true
}

// ControllerRef returns the owner reference marked controller, or nil.
func (m *ObjectMeta) ControllerRef() *OwnerReference {
	for i := range m.OwnerReferences {
		if m.OwnerReferences[i].Controller {
			return &m.OwnerReferences[i]
		}
	}
	return nil
}

// OwnerRefTo returns a reference to owner for a dependent's
// metadata.ownerReferences; controller marks the owner that manages the
// dependent. owner must have been read from the API (it needs its uid).
func OwnerRefTo(owner Resource, controller bool) OwnerReference {
	t, m := owner.GetTypeMeta(), owner.GetObjectMeta()
	return OwnerReference{APIVersion: APIVersion, Kind: t.Kind, Name: m.Name, UID: m.UID, Controller: controller}
}

// Resource is implemented by every typed kind (through the embedded TypeMeta
// and ObjectMeta) and by the generic Object.
type Resource interface {
	GetTypeMeta() *TypeMeta
	GetObjectMeta() *ObjectMeta
}

// ListMeta is the metadata of a list response.
type ListMeta struct {
	// ResourceVersion is the store revision the list was read at; a watch
	// started from it misses nothing.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Continue, when set, fetches the next page of a limited list.
	Continue string `json:"continue,omitempty"`
}

// Key returns "namespace/name", or "name" for cluster-scoped objects.
func Key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// SplitKey reads a key made by Key: "namespace/name", or "name" for
// cluster-scoped objects (namespace "").
func SplitKey(key string) (namespace, name string) {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}

package api

// ActionDependents is the name of the object endpoint that answers
// Dependents: GET .../{plural}/{name}/dependents.
const ActionDependents = "dependents"

// KindDependents is the kind of a Dependents answer.
const KindDependents = "Dependents"

// Dependents is what deleting an object would take, seen from the garbage
// collector's dependency graph before anything is deleted: the object and
// every dependent whose owners would all be gone, as a tree, with counts
// per kind, the protected objects (AnnotationDeletionProtection) that
// would block the cascade, and the dependents that would only lose their
// reference because they keep another live owner.
type Dependents struct {
	TypeMeta `json:",inline"`
	// Root is the object itself, its Dependents the tree of what its
	// deletion takes. Each object appears once, under the first owner
	// that takes it.
	Root DependentNode `json:"root"`
	// Counts are the objects the deletion takes, the object included, by
	// kind; Total is their sum.
	Counts map[string]int `json:"counts"`
	Total  int            `json:"total"`
	// Blockers are the protected objects among them: the deletion stops
	// at each (it and what it owns stay) until its protection is lifted.
	Blockers []ObjectReference `json:"blockers,omitempty"`
	// Detached are dependents that keep another live owner: they stay,
	// without their reference to the deleted objects.
	Detached []ObjectReference `json:"detached,omitempty"`
}

// DependentNode is one object of a Dependents tree.
type DependentNode struct {
	ObjectReference
	UID string `json:"uid,omitempty"`
	// Protected: it carries the deletion-protection annotation, and blocks
	// the cascade there; its own dependents are not listed.
	Protected bool `json:"protected,omitempty"`
	// Deleting: it is being deleted already.
	Deleting   bool            `json:"deleting,omitempty"`
	Dependents []DependentNode `json:"dependents,omitempty"`
}

package registry

import (
	"context"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/identity"
)

// Operation is the write a kind's admission hooks are called for.
type Operation string

// The writes hooks are called for.
const (
	// OpCreate: a new object (PrepareForCreate, Validate).
	OpCreate Operation = "create"
	// OpUpdate: a write of the main resource, from Update or Patch
	// (PrepareForUpdate, Validate, ValidateUpdate).
	OpUpdate Operation = "update"
	// OpUpdateStatus: a write of the status subresource (ValidateStatus).
	OpUpdateStatus Operation = "updateStatus"
	// OpDelete: an object being marked for deletion (PrepareForDelete).
	OpDelete Operation = "delete"
)

// Admission is what a kind's hooks get besides the objects: which write
// they admit, who asks for it, and a way to read other objects. It is
// built by the registry for each write; hooks must not keep it.
type Admission struct {
	// Op is the write being admitted.
	Op Operation
	// User is the caller who asked for the write (already authorized).
	User identity.User
	// Get reads other objects, as the system: without authorization, and
	// never for writing.
	Get Getter

	// manager is the write's field manager ("" when it names none) and
	// applied is true when the write is an apply whose managed fields are
	// recorded already (managedfields.go).
	manager string
	applied bool
	// acts are what the write's object acts for that its stored version
	// did not (Spec.Acts), set by the kind's prepare: the registry checks
	// them as the object's creator (creator.go).
	acts []authz.Attributes
}

// Getter reads objects for admission hooks. It reads through the registry
// as the system, with no authorization, and cannot write. What it returns
// is the hook's own copy.
type Getter interface {
	// Get reads one object at the latest revision. It blocks on one store
	// read, bounded by ctx. Errors: NotFound (unknown kind or object),
	// ServiceUnavailable or Timeout (the store does not answer),
	// InternalError.
	Get(ctx context.Context, kind, ns, name string) (*api.Object, error)
	// List reads the objects of a kind in ns ("" for every namespace), as
	// Registry.List does. It blocks on one store read per page of 500
	// objects, bounded by ctx. Errors: as Registry.List.
	List(ctx context.Context, kind, ns string, opts api.ListOptions) (*api.List, error)
}

// systemGetter is the registry's Getter.
type systemGetter struct{ r *Registry }

func (g systemGetter) Get(ctx context.Context, kind, ns, name string) (*api.Object, error) {
	k, err := g.r.Lookup(kind)
	if err != nil {
		return nil, err
	}
	cur, err := g.r.read(ctx, k, ns, name)
	if err != nil {
		return nil, apiError(err, k.Kind, name)
	}
	return cur.obj, nil
}

func (g systemGetter) List(ctx context.Context, kind, ns string, opts api.ListOptions) (*api.List, error) {
	k, err := g.r.Lookup(kind)
	if err != nil {
		return nil, err
	}
	l, err := g.r.list(ctx, k, ns, opts)
	if err != nil {
		return nil, apiError(err, k.Kind, "")
	}
	return l, nil
}

// admission builds the Admission of a write of op by u.
func (r *Registry) admission(op Operation, u identity.User) *Admission {
	return &Admission{Op: op, User: u, Get: systemGetter{r}}
}

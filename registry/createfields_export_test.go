package registry

import "cairn.dev/cairn/api"

// FieldManagerCreate records obj's managed fields as the field manager
// records a create by manager, remembering nothing (tests only).
func FieldManagerCreate(r *Registry, kind string, obj *api.Object, manager string) (*api.Object, error) {
	k, err := r.Lookup(kind)
	if err != nil {
		return nil, err
	}
	return r.fieldManagerUpdate(k, OpCreate, nil, obj, manager)
}

// RemembersCreateShape reports whether a create of obj's kind and shape
// copies remembered managed fields (tests only).
func RemembersCreateShape(r *Registry, obj *api.Object) bool {
	shape, ok := createShape(obj)
	if !ok {
		return false
	}
	_, ok = r.schemas.creates.lookup(obj.Kind, shape)
	return ok
}

// CreateShape is createShape (tests only).
func CreateShape(obj *api.Object) (string, bool) { return createShape(obj) }

// JSONShape is jsonShape (tests only).
func JSONShape(raw []byte) (string, bool) { return jsonShape(raw) }

// RecordCreate records the managed fields of a create of a copy of obj by
// manager as a create does, and reports whether it copied those of a
// remembered shape (tests only).
func RecordCreate(r *Registry, obj *api.Object, manager string) (*api.Object, bool, error) {
	k, err := r.Lookup(obj.Kind)
	if err != nil {
		return nil, false, err
	}
	remembered := RemembersCreateShape(r, obj)
	out, err := r.recordUpdate(k, OpCreate, nil, obj.DeepCopy(), manager, "caller")
	return out, remembered, err
}

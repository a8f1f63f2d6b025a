package client

import (
	"context"
	"fmt"
	"reflect"

	"cairn.dev/cairn/api"
)

// Typed is a client for one kind with typed objects: T is a pointer to the
// kind's struct, e.g. *api.Secret. Build it with For. Its methods have the
// semantics and errors of the Interface methods they wrap; conversion
// failures (an object that does not decode into T) are reported as errors
// too.
type Typed[T api.Resource] struct {
	c    Interface
	kind string
	elem reflect.Type
}

// For returns a typed client for T over c. The kind name is T's struct
// name ("Secret" for *api.Secret). It panics when T is not a pointer to a
// named struct, or is *api.Object (use Interface directly for that): both
// are programming errors.
func For[T api.Resource](c Interface) Typed[T] {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct || t.Elem().Name() == "" ||
		t == reflect.TypeFor[*api.Object]() {
		panic(fmt.Sprintf("client.For: %v is not a pointer to a kind struct", t))
	}
	return Typed[T]{c: c, kind: t.Elem().Name(), elem: t.Elem()}
}

// Kind returns the kind name of T.
func (t Typed[T]) Kind() string { return t.kind }

// Interface returns the untyped client underneath.
func (t Typed[T]) Interface() Interface { return t.c }

// Convert decodes a generic object (from an informer cache, say) into T.
// The result is independent of obj. Errors: obj does not decode into T.
func Convert[T api.Resource](obj *api.Object) (T, error) {
	t := reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
	if err := obj.Into(t); err != nil {
		var zero T
		return zero, fmt.Errorf("client: convert %s %q: %w", obj.Kind, api.Key(obj.Namespace, obj.Name), err)
	}
	return t, nil
}

func (t Typed[T]) from(obj *api.Object, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	return Convert[T](obj)
}

// toObject converts a typed object for sending, filling apiVersion and kind
// when unset.
func (t Typed[T]) toObject(v T) (*api.Object, error) {
	obj, err := api.FromResource(v)
	if err != nil {
		return nil, fmt.Errorf("client: encode %s: %w", t.kind, err)
	}
	if obj.Kind == "" {
		obj.Kind = t.kind
	}
	if obj.APIVersion == "" {
		obj.APIVersion = api.APIVersion
	}
	return obj, nil
}

// Get reads one object. See Interface.Get.
func (t Typed[T]) Get(ctx context.Context, ns, name string) (T, error) {
	return t.from(t.c.Get(ctx, t.kind, ns, name))
}

// List reads the objects in ns ("" for all) and returns them with the
// list's metadata (resourceVersion, continue). See Interface.List.
func (t Typed[T]) List(ctx context.Context, ns string, opts api.ListOptions) ([]T, api.ListMeta, error) {
	l, err := t.c.List(ctx, t.kind, ns, opts)
	if err != nil {
		return nil, api.ListMeta{}, err
	}
	out := make([]T, 0, len(l.Items))
	for _, o := range l.Items {
		v, err := Convert[T](o)
		if err != nil {
			return nil, api.ListMeta{}, err
		}
		out = append(out, v)
	}
	return out, l.ListMeta, nil
}

// Create stores a new object. See Interface.Create.
func (t Typed[T]) Create(ctx context.Context, v T) (T, error) {
	obj, err := t.toObject(v)
	if err != nil {
		var zero T
		return zero, err
	}
	return t.from(t.c.Create(ctx, obj))
}

// Update replaces the main resource. See Interface.Update.
func (t Typed[T]) Update(ctx context.Context, v T) (T, error) {
	obj, err := t.toObject(v)
	if err != nil {
		var zero T
		return zero, err
	}
	return t.from(t.c.Update(ctx, obj))
}

// UpdateStatus replaces the status. See Interface.UpdateStatus.
func (t Typed[T]) UpdateStatus(ctx context.Context, v T) (T, error) {
	obj, err := t.toObject(v)
	if err != nil {
		var zero T
		return zero, err
	}
	return t.from(t.c.UpdateStatus(ctx, obj))
}

// Patch applies a JSON merge patch. See Interface.Patch.
func (t Typed[T]) Patch(ctx context.Context, ns, name string, patch []byte, status bool) (T, error) {
	return t.from(t.c.Patch(ctx, t.kind, ns, name, patch, status))
}

// Delete marks or removes an object. See Interface.Delete.
func (t Typed[T]) Delete(ctx context.Context, ns, name string, opts api.DeleteOptions) (T, bool, error) {
	obj, gone, err := t.c.Delete(ctx, t.kind, ns, name, opts)
	v, err := t.from(obj, err)
	return v, gone, err
}

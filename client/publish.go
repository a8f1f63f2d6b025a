package client

import (
	"context"
	"errors"
	"fmt"

	"cairn.dev/cairn/api"
)

// Publish writes obj, whose field holds a value someone else reads (a
// DataObject of exports): it creates obj, or, when an object of that name
// exists already, updates that object's field to obj's value unless it
// holds that value (api.SameJSON). The first publication, the usual case,
// reads nothing. Its errors name the write that failed and the object.
func Publish(ctx context.Context, c Interface, obj *api.Object, field string) error {
	_, err := c.Create(ctx, obj)
	if err == nil {
		return nil
	}
	if !errors.Is(err, api.ErrAlreadyExists) {
		return fmt.Errorf("create %s %s: %w", obj.Kind, obj.Name, err)
	}
	cur, err := c.Get(ctx, obj.Kind, obj.Namespace, obj.Name)
	if err != nil {
		return fmt.Errorf("read %s %s: %w", obj.Kind, obj.Name, err)
	}
	if api.SameJSON(cur.Field(field), obj.Field(field)) {
		return nil
	}
	next := cur.DeepCopy()
	next.SetField(field, obj.Field(field))
	if _, err := c.Update(ctx, next); err != nil {
		return fmt.Errorf("update %s %s: %w", obj.Kind, obj.Name, err)
	}
	return nil
}

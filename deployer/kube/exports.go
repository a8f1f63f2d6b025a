package kube

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Exports builds the exports object {key: value} of ex: each value is
// read at its jsonPath from its resource (through g), or at its
// fromValues path in values (helm's release values). It blocks on the
// cluster. Errors name the entry (exports[i], its key) and the object or
// path that is missing; an error of g other than NotFound is returned
// as is.
func Exports(ctx context.Context, g Getter, values map[string]any, ex []Export) (json.RawMessage, error) {
	if len(ex) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(ex))
	for i, e := range ex {
		at := fmt.Sprintf("exports[%d] (key %s)", i, e.Key)
		if e.FromValues != "" {
			v, err := Lookup(values, e.FromValues)
			if err != nil {
				return nil, fmt.Errorf("%s: the release's values: %w", at, err)
			}
			out[e.Key] = v
			continue
		}
		if e.Resource == nil {
			return nil, fmt.Errorf("%s: resource is missing", at)
		}
		obj, err := g.Get(ctx, *e.Resource)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s: %s does not exist", at, e.Resource)
		}
		if err != nil {
			return nil, err
		}
		v, err := Lookup(obj.Object, e.JSONPath)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", at, e.Resource, err)
		}
		out[e.Key] = v
	}
	return json.Marshal(out)
}

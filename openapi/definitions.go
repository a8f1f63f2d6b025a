package openapi

import (
	"fmt"
	"reflect"

	"k8s.io/kube-openapi/pkg/validation/spec"
)

// KindDefinitions derives only the schemas of rs's kinds (the definitions
// Build puts in its documents, by name, each kind's under
// DefinitionName), without the paths and without encoding any document:
// a few milliseconds where Build takes a tenth of a second, for callers
// that only read schemas (the type check of a Cleaner's conditions). It
// fails as Build does for a Go type it cannot describe.
func KindDefinitions(rs []Resource) (map[string]*spec.Schema, error) {
	b := newSchemas()
	for _, r := range rs {
		if r.Type == nil || r.Type.Kind() != reflect.Struct {
			return nil, fmt.Errorf("openapi: kind %s: Type must be a struct type, not %v", r.Info.Kind, r.Type)
		}
		if err := b.kind(r.Info.Kind, r.Type); err != nil {
			return nil, fmt.Errorf("openapi: kind %s: %w", r.Info.Kind, err)
		}
	}
	out := make(map[string]*spec.Schema, len(b.defs))
	for name := range b.defs {
		d := b.defs[name]
		out[name] = &d
	}
	return out, nil
}

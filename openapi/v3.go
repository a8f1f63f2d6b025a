package openapi

import (
	"strings"

	"k8s.io/kube-openapi/pkg/validation/spec"
)

// inheritedDocsAsRefs rewrites, in the v3 schemas, the properties whose
// description is only that of the definition they refer to: the v2 to v3
// conversion wraps such a reference in an allOf, as Kubernetes does for a
// reference with a description of its own, and kubectl explain then
// prints the description twice (the property's and its allOf's). A plain
// $ref with the description beside it is printed once, and kubectl still
// lists the field with it.
func inheritedDocsAsRefs(schemas map[string]*spec.Schema) {
	desc := func(ref spec.Ref) string {
		if d := schemas[strings.TrimPrefix(ref.String(), "#/components/schemas/")]; d != nil {
			return d.Description
		}
		return ""
	}
	var walk func(s *spec.Schema)
	walk = func(s *spec.Schema) {
		if s == nil {
			return
		}
		for name, p := range s.Properties {
			if len(p.AllOf) == 1 && p.AllOf[0].Ref.String() != "" && p.Description != "" && p.Description == desc(p.AllOf[0].Ref) &&
				len(p.Type) == 0 && len(p.Properties) == 0 && p.Items == nil && len(p.Extensions) == 0 && p.Default == nil {
				s.Properties[name] = spec.Schema{SchemaProps: spec.SchemaProps{Ref: p.AllOf[0].Ref, Description: p.Description}}
				continue
			}
			walk(&p)
			s.Properties[name] = p
		}
		if s.Items != nil {
			walk(s.Items.Schema)
		}
		if s.AdditionalProperties != nil {
			walk(s.AdditionalProperties.Schema)
		}
	}
	for _, s := range schemas {
		walk(s)
	}
}

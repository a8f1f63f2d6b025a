package condition

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Type checking against the schemas of the targets' kinds, as Kubernetes
// checks the validation rules of a CRD: admission compiles the conditions
// once more in an environment where each target variable has the type its
// kind's OpenAPI schema gives (object fields, strings, integers, lists,
// maps), so `pr.metadata.name + 1 == 2` is refused, naming the operator
// and the types, instead of failing at every evaluation. Free-form parts
// of a schema (a deploy item's config, an event's payload) stay `dyn`.
// Strings stay strings whatever their format (the values evaluated are
// the objects' JSON: `timestamp(pr.metadata.creationTimestamp)` converts
// one), and JSON numbers whose schema says `number` are `dyn` (a whole
// number arrives as an int). Evaluation needs no types: the controller
// evaluates the programs Compile makes.

// TypedVar is a target variable typed by the schema of its kind.
type TypedVar struct {
	// Name is the variable; Kind the kind of its objects.
	Name, Kind string
	// Selected: the variable is `{items: [...]}` (a label selector);
	// otherwise it is one object (or null).
	Selected bool
}

// Schemas are the OpenAPI v2 definitions of the served kinds.
type Schemas struct {
	// Defs holds the definitions by name (openapi.Spec.Definitions).
	Defs map[string]*spec.Schema
	// DefName names the definition of a kind (openapi.DefinitionName).
	DefName func(kind string) string
}

// Typed names of the object types the checker sees.
const (
	typePrefix = "cairn."
	targetType = typePrefix + "target."
	defType    = typePrefix + "def."
)

// schemaProvider answers the checker's questions about object types from
// the schemas; everything else goes to the environment's own provider.
// Field types are computed on first use and kept (concurrent use is safe:
// one environment may check several admissions at once).
type schemaProvider struct {
	types.Provider
	s *Schemas

	mu sync.Mutex
	// objects are the object types seen, by CEL type name.
	objects map[string]objectSchema
	fields  map[string]*types.FieldType // by "type\x00field"
}

// objectSchema is an object type: the schema of its properties, plus
// fields of its own (lastChangeTime, a selection's items).
type objectSchema struct {
	schema *spec.Schema
	extra  map[string]*types.Type
}

// TypeCheck type-checks every condition against vars typed by s (and
// `time`). It returns an issue per condition that does not type-check,
// with where and why; conditions that do not even compile untyped are
// Compile's to report (they are skipped here). An error is returned only
// when the environment cannot be built.
func TypeCheck(vars []TypedVar, conditions []string, s *Schemas) ([]Issue, error) {
	env, err := typedEnv(vars, s)
	if err != nil {
		return nil, err
	}
	var issues []Issue
	for i, src := range conditions {
		if strings.TrimSpace(src) == "" || len(src) > MaxConditionBytes {
			continue
		}
		_, iss := env.Compile(src)
		if iss.Err() == nil {
			continue
		}
		for _, e := range iss.Errors() {
			issues = append(issues, Issue{Index: i, Line: e.Location.Line(), Column: e.Location.Column() + 1,
				Message: e.Message + " (as typed by the schema of the targets' kinds)"})
		}
	}
	return issues, nil
}

// typedEnv is NewEnv's environment with each variable of vars typed.
func typedEnv(vars []TypedVar, s *Schemas) (*cel.Env, error) {
	base, err := NewEnv(nil)
	if err != nil {
		return nil, fmt.Errorf("condition: environment: %w", err)
	}
	p := &schemaProvider{Provider: base.CELTypeProvider(), s: s,
		objects: map[string]objectSchema{}, fields: map[string]*types.FieldType{}}
	opts := []cel.EnvOption{cel.CustomTypeProvider(p)}
	for _, v := range vars {
		t, err := p.varType(v)
		if err != nil {
			return nil, err
		}
		opts = append(opts, cel.Variable(v.Name, t))
	}
	env, err := base.Extend(opts...)
	if err != nil {
		return nil, fmt.Errorf("condition: typed environment: %w", err)
	}
	return env, nil
}

// varType is the type of a target variable: its kind's object (with
// lastChangeTime), or {items: list(object)} for a selection.
func (p *schemaProvider) varType(v TypedVar) (*types.Type, error) {
	def, ok := p.s.Defs[p.s.DefName(v.Kind)]
	if !ok {
		return nil, fmt.Errorf("condition: no schema for the kind %s", v.Kind)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	obj := targetType + v.Kind
	p.objects[obj] = objectSchema{schema: def, extra: map[string]*types.Type{"lastChangeTime": types.TimestampType}}
	if !v.Selected {
		return types.NewObjectType(obj), nil
	}
	list := obj + ".selection"
	p.objects[list] = objectSchema{schema: &spec.Schema{}, extra: map[string]*types.Type{
		"items": types.NewListType(types.NewObjectType(obj))}}
	return types.NewObjectType(list), nil
}

// FindStructType answers for the object types of the schemas.
func (p *schemaProvider) FindStructType(name string) (*types.Type, bool) {
	p.mu.Lock()
	_, ok := p.objects[name]
	p.mu.Unlock()
	if ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Provider.FindStructType(name)
}

// FindStructFieldNames lists an object type's fields.
func (p *schemaProvider) FindStructFieldNames(name string) ([]string, bool) {
	p.mu.Lock()
	o, ok := p.objects[name]
	p.mu.Unlock()
	if !ok {
		return p.Provider.FindStructFieldNames(name)
	}
	names := slices.Collect(maps.Keys(o.schema.Properties))
	names = append(names, slices.Collect(maps.Keys(o.extra))...)
	slices.Sort(names)
	return names, true
}

// FindStructFieldType types one field of an object type. The values
// evaluated are maps, so the field is read as a map's key: no accessors.
func (p *schemaProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	p.mu.Lock()
	_, ours := p.objects[name]
	p.mu.Unlock()
	if !ours {
		return p.Provider.FindStructFieldType(name, field)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	key := name + "\x00" + field
	if ft, ok := p.fields[key]; ok {
		return ft, true
	}
	o := p.objects[name]
	var t *types.Type
	if x, ok := o.extra[field]; ok {
		t = x
	} else if fs, ok := o.schema.Properties[field]; ok {
		t = p.typeOf(name+"."+field, &fs)
	} else {
		return nil, false
	}
	ft := &types.FieldType{Type: t}
	p.fields[key] = ft
	return ft, true
}

// typeOf is the CEL type of a value of schema s found at path name
// (which names its object type when it is an inline object). p.mu is held.
func (p *schemaProvider) typeOf(name string, s *spec.Schema) *types.Type {
	if ref := s.Ref.String(); ref != "" {
		def := strings.TrimPrefix(ref, "#/definitions/")
		target, ok := p.s.Defs[def]
		if !ok {
			return types.DynType
		}
		obj := defType + def
		if _, seen := p.objects[obj]; !seen {
			p.objects[obj] = objectSchema{schema: target}
		}
		return p.typeOfObject(obj, target)
	}
	if free(s) {
		return types.DynType
	}
	switch {
	case s.Type.Contains("string"):
		return types.StringType
	case s.Type.Contains("boolean"):
		return types.BoolType
	case s.Type.Contains("integer"):
		return types.IntType
	case s.Type.Contains("array"):
		if s.Items == nil || s.Items.Schema == nil {
			return types.NewListType(types.DynType)
		}
		return types.NewListType(p.typeOf(name+"[]", s.Items.Schema))
	case s.Type.Contains("object") || len(s.Properties) > 0:
		if len(s.Properties) == 0 {
			if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
				return types.NewMapType(types.StringType, p.typeOf(name+"{}", ap.Schema))
			}
			return types.NewMapType(types.StringType, types.DynType)
		}
		if _, seen := p.objects[name]; !seen {
			p.objects[name] = objectSchema{schema: s}
		}
		return types.NewObjectType(name)
	}
	// A number may arrive as an int or a double; anything else is free.
	return types.DynType
}

// typeOfObject is the type of a definition: an object type when it has
// properties, else what its schema says (a map, a string...).
func (p *schemaProvider) typeOfObject(obj string, s *spec.Schema) *types.Type {
	if len(s.Properties) > 0 {
		return types.NewObjectType(obj)
	}
	delete(p.objects, obj)
	return p.typeOf(obj, &spec.Schema{SchemaProps: spec.SchemaProps{Type: s.Type, Items: s.Items,
		AdditionalProperties: s.AdditionalProperties}, VendorExtensible: s.VendorExtensible})
}

// free reports whether s says nothing of the value's type: any JSON
// (x-kubernetes-preserve-unknown-fields with no properties, an
// int-or-string, no type at all).
func free(s *spec.Schema) bool {
	if v, ok := s.Extensions.GetBool("x-kubernetes-int-or-string"); ok && v {
		return true
	}
	if v, ok := s.Extensions.GetBool("x-kubernetes-preserve-unknown-fields"); ok && v && len(s.Properties) == 0 {
		return true
	}
	return len(s.Type) == 0 && len(s.Properties) == 0 && s.Items == nil && s.AdditionalProperties == nil
}

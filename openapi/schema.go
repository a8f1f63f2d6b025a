package openapi

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeutil "k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"cairn.dev/cairn/api"
)

// The Kubernetes extensions the schemas carry.
const (
	extGVK             = "x-kubernetes-group-version-kind"
	extAction          = "x-kubernetes-action"
	extListType        = "x-kubernetes-list-type"
	extListMapKeys     = "x-kubernetes-list-map-keys"
	extPreserveUnknown = "x-kubernetes-preserve-unknown-fields"
	extIntOrString     = "x-kubernetes-int-or-string"
)

// apiPkg is the package of cairn's wire types, whose docs are generated
// into apiDocs.
var apiPkg = reflect.TypeFor[api.ObjectMeta]().PkgPath()

// The Go types whose JSON form is not what reflection sees.
var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	timeType       = reflect.TypeFor[time.Time]()
	metaTimeType   = reflect.TypeFor[metav1.Time]()
	microTimeType  = reflect.TypeFor[metav1.MicroTime]()
	fieldsV1Type   = reflect.TypeFor[metav1.FieldsV1]()
	durationType   = reflect.TypeFor[api.Duration]()
	quantityType   = reflect.TypeFor[resource.Quantity]()
)

// The Kubernetes types the operations take or return.
var (
	statusType        = reflect.TypeFor[metav1.Status]()
	deleteOptionsType = reflect.TypeFor[metav1.DeleteOptions]()
	patchType         = reflect.TypeFor[metav1.Patch]()
)

// schemas builds the definitions: one per named struct type, by name.
type schemas struct {
	defs spec.Definitions
	// types is the Go type of each definition built or being built.
	types map[string]reflect.Type
}

func newSchemas() *schemas {
	return &schemas{defs: spec.Definitions{}, types: map[string]reflect.Type{}}
}

// gvk is the value of x-kubernetes-group-version-kind for kind, in the
// shape a decoded document has (what managedfields reads).
func gvk(kind string) map[string]any {
	return map[string]any{"group": api.Group, "version": api.Version, "kind": kind}
}

// kind defines the schema of the kind's Go type t, marked with the kind's
// group, version and kind, and the schema of its list.
func (b *schemas) kind(kind string, t reflect.Type) error {
	name, err := b.define(t)
	if err != nil {
		return err
	}
	d := b.defs[name]
	if _, ok := d.Extensions[extGVK]; ok {
		return fmt.Errorf("Go type %v is already the type of another kind", t)
	}
	d.AddExtension(extGVK, []any{gvk(kind)})
	if m, ok := d.Properties["metadata"]; ok {
		d.Properties["metadata"] = *m.WithDescription("Standard object metadata: the object's name, namespace, labels, annotations, owners and finalizers, and what the server records about it.")
	}
	b.defs[name] = d

	listName := DefinitionName(kind + "List")
	if _, taken := b.types[listName]; taken {
		return fmt.Errorf("definition %s is already the name of a Go type", listName)
	}
	list := spec.Schema{
		SchemaProps: spec.SchemaProps{
			Description: kind + "List is a list of " + kind + " objects.",
			Type:        spec.StringOrArray{"object"},
			Required:    []string{"items"},
			Properties: map[string]spec.Schema{
				"apiVersion": d.Properties["apiVersion"],
				"kind":       d.Properties["kind"],
				"metadata":   *refTo(DefinitionName("ListMeta")).WithDescription("Standard list metadata: the revision the list was read at, and the token of its next page."),
				"items":      *spec.ArrayProperty(refTo(name)).WithDescription("The " + kind + " objects of the list."),
			},
		},
	}
	list.AddExtension(extGVK, []any{gvk(kind + "List")})
	b.types[listName] = nil
	b.defs[listName] = list
	_, err = b.define(reflect.TypeFor[api.ListMeta]())
	return err
}

// commonTypes defines the Kubernetes types the operations take or return.
func (b *schemas) commonTypes() error {
	for _, t := range []reflect.Type{statusType, deleteOptionsType, patchType} {
		if _, err := b.define(t); err != nil {
			return err
		}
	}
	return nil
}

func refTo(name string) *spec.Schema { return spec.RefSchema("#/definitions/" + name) }

// defName names the definition of a named Go type: cairn's wire types
// like a custom resource's ("dev.cairn.v1alpha1.Installation"), others as
// Kubernetes names its built-in types, by package path
// ("io.k8s.apimachinery.pkg.apis.meta.v1.Status").
func defName(t reflect.Type) string {
	if t.PkgPath() == apiPkg {
		return DefinitionName(t.Name())
	}
	return kubeutil.ToRESTFriendlyName(t.PkgPath() + "." + t.Name())
}

// define builds the definition of the named struct type t (once) and
// returns its name.
func (b *schemas) define(t reflect.Type) (string, error) {
	if strings.ContainsAny(t.Name(), "[]") {
		return "", fmt.Errorf("generic type %v cannot be named", t)
	}
	name := defName(t)
	if have, ok := b.types[name]; ok {
		if have != t {
			return "", fmt.Errorf("Go types %v and %v would share definition %s", have, t, name)
		}
		return name, nil
	}
	b.types[name] = t // before the fields: a type may refer to itself
	s, err := b.object(t)
	if err != nil {
		return "", fmt.Errorf("%v: %w", t, err)
	}
	b.defs[name] = s
	return name, nil
}

// object is the schema of struct type t: its JSON fields, embedded
// structs without a JSON name inlined as encoding/json does.
func (b *schemas) object(t reflect.Type) (spec.Schema, error) {
	s := spec.Schema{SchemaProps: spec.SchemaProps{
		Description: typeDoc(t),
		Type:        spec.StringOrArray{"object"},
		Properties:  map[string]spec.Schema{},
	}}
	if err := b.fields(t, &s); err != nil {
		return s, err
	}
	if len(s.Properties) == 0 {
		s.Properties = nil
	}
	return s, nil
}

// fields adds the JSON fields of struct type t to s.
func (b *schemas) fields(t reflect.Type, s *spec.Schema) error {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			if et := deref(f.Type); et.Kind() == reflect.Struct {
				if err := b.fields(et, s); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := s.Properties[name]; dup {
			return fmt.Errorf("field %s: JSON name %q used twice", f.Name, name)
		}
		fs, err := b.field(t, f, name)
		if err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		s.Properties[name] = fs
		optional := false
		for o := range strings.SplitSeq(opts, ",") {
			optional = optional || o == "omitempty" || o == "omitzero"
		}
		// metadata is not required of a write (generateName), as in
		// Kubernetes, although cairn always writes it.
		if !optional && name != "metadata" {
			s.Required = append(s.Required, name)
		}
	}
	return nil
}

// field is the schema of field f of struct type owner, JSON name name.
func (b *schemas) field(owner reflect.Type, f reflect.StructField, name string) (spec.Schema, error) {
	s, err := b.use(f.Type)
	if err != nil {
		return s, err
	}
	if d := fieldDoc(owner, f, name); d != "" {
		s.Description = d
	}
	if s.Type.Contains("array") {
		typ, keys, err := listType(owner, f)
		if err != nil {
			return s, err
		}
		if typ != "" {
			s.AddExtension(extListType, typ)
		}
		if len(keys) > 0 {
			ks := make([]any, len(keys))
			for i, k := range keys {
				ks[i] = k
			}
			s.AddExtension(extListMapKeys, ks)
		}
	}
	return s, nil
}

// use is the schema of a value of type t: a reference to the definition
// of a named struct, the schema itself for anything else.
func (b *schemas) use(t reflect.Type) (spec.Schema, error) {
	if t.Kind() == reflect.Pointer {
		return b.use(t.Elem())
	}
	switch t {
	case rawMessageType:
		return anyValue(), nil
	case timeType, metaTimeType, microTimeType:
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string"}, Format: "date-time"}}, nil
	case durationType:
		return *spec.StringProperty(), nil
	case fieldsV1Type:
		s := spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}}
		s.AddExtension(extPreserveUnknown, true)
		return s, nil
	case quantityType:
		var s spec.Schema
		s.AddExtension(extIntOrString, true)
		return s, nil
	}
	if customJSON(t) {
		return spec.Schema{}, fmt.Errorf("type %v marshals itself to JSON: describe its form in package openapi", t)
	}
	switch t.Kind() {
	case reflect.Struct:
		if t.Name() == "" {
			return b.object(t)
		}
		name, err := b.define(t)
		if err != nil {
			return spec.Schema{}, err
		}
		return *refTo(name), nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string"}, Format: "byte"}}, nil
		}
		item, err := b.use(t.Elem())
		if err != nil {
			return item, err
		}
		return *spec.ArrayProperty(&item), nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return spec.Schema{}, fmt.Errorf("map key type %v is not a string", t.Key())
		}
		v, err := b.use(t.Elem())
		if err != nil {
			return v, err
		}
		return *spec.MapProperty(&v), nil
	case reflect.String:
		s := *spec.StringProperty()
		if t.PkgPath() == apiPkg {
			for _, v := range apiDocs.Enums[t.Name()] {
				s.Enum = append(s.Enum, v)
			}
		}
		return s, nil
	case reflect.Bool:
		return *spec.BoolProperty(), nil
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return *spec.Int32Property(), nil
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return *spec.Int64Property(), nil
	case reflect.Float32:
		return *spec.Float32Property(), nil
	case reflect.Float64:
		return *spec.Float64Property(), nil
	case reflect.Interface:
		return anyValue(), nil
	}
	return spec.Schema{}, fmt.Errorf("type %v has no JSON form", t)
}

// anyValue is the schema of arbitrary JSON.
func anyValue() spec.Schema {
	var s spec.Schema
	s.AddExtension(extPreserveUnknown, true)
	return s
}

// customJSON reports whether t (or *t) marshals itself.
func customJSON(t reflect.Type) bool {
	for _, x := range []reflect.Type{t, reflect.PointerTo(t)} {
		if x.Implements(reflect.TypeFor[json.Marshaler]()) || x.Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
			return true
		}
	}
	return false
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// elemType is the named type a field's values are of: through pointers,
// slices and maps.
func elemType(t reflect.Type) reflect.Type {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		default:
			return t
		}
	}
}

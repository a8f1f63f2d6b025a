package watchcache

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"cairn.dev/cairn/api"
)

// Selection is what a list or a watch selects: objects whose labels match
// Labels and whose metadata.name and metadata.namespace match Fields. A
// nil selector selects everything.
type Selection struct {
	Labels labels.Selector
	Fields fields.Selector
}

// The fields a field selector may name.
const (
	FieldName      = "metadata.name"
	FieldNamespace = "metadata.namespace"
)

// Empty reports whether the selection selects every object.
func (s Selection) Empty() bool {
	return (s.Labels == nil || s.Labels.Empty()) && (s.Fields == nil || s.Fields.Empty())
}

// Matches reports whether o is selected.
func (s Selection) Matches(o *api.Object) bool {
	return s.fieldsMatch(o.Name, o.Namespace) && s.labelsMatch(o.Labels)
}

func (s Selection) labelsMatch(l map[string]string) bool {
	return s.Labels == nil || s.Labels.Empty() || s.Labels.Matches(labels.Set(l))
}

// fieldsMatch reports whether an object named name in namespace ns is
// selected by the field selector (the fields never change for one key).
func (s Selection) fieldsMatch(name, ns string) bool {
	return s.Fields == nil || s.Fields.Empty() || s.Fields.Matches(fields.Set{FieldName: name, FieldNamespace: ns})
}

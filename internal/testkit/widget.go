package testkit

import (
	"encoding/json"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
)

// KindWidget is the name of the test kind WidgetKind defines.
const KindWidget = "Widget"

// widget is the Go type of a Widget: a namespaced object whose spec and
// status are free-form JSON, so a test can put there whatever its
// controller reads.
type widget struct {
	api.TypeMeta   `json:",inline"`
	api.ObjectMeta `json:"metadata"`
	Spec           json.RawMessage `json:"spec,omitempty"`
	Status         json.RawMessage `json:"status,omitempty"`
}

// WidgetKind defines the test kind Widget (plural "widgets", short name
// "wd"): namespaced, with a status subresource, no hooks. Serve it next to
// the real kinds, e.g.
//
//	servertest.Start(t, servertest.WithKinds(append(kinds.All(kinds.Deps{}), testkit.WidgetKind())...))
func WidgetKind() registry.Kind {
	return registry.Define(registry.Spec[*widget]{
		Kind:       KindWidget,
		Namespaced: true,
		ShortNames: []string{"wd"},
		Columns: []api.Column{
			{Name: "PHASE", Path: ".status.phase"},
			{Name: "AGE", Path: ".metadata.creationTimestamp", Format: "age"},
		},
	})
}

// Widget builds a Widget named name in namespace ns with opts applied
// (Spec, Labels, OwnedBy, ...).
func Widget(ns, name string, opts ...Opt) *api.Object {
	return Object(KindWidget, ns, name, opts...)
}

package kinds

import (
	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
)

// Namespace defines the Namespace kind: cluster-scoped, Active while live
// and Terminating once deleted, until everything in it is gone.
func Namespace() registry.Kind {
	return registry.Define(registry.Spec[*api.Namespace]{
		Kind:       api.KindNamespace,
		ShortNames: []string{"ns"},
		Columns: []api.Column{
			{Name: "STATUS", Path: ".status.phase"},
			{Name: "AGE", Path: ".metadata.creationTimestamp", Format: "age"},
		},
		PrepareForCreate: func(ns *api.Namespace) { ns.Status.Phase = api.NamespaceActive },
		PrepareForDelete: func(ns *api.Namespace) { ns.Status.Phase = api.NamespaceTerminating },
	})
}

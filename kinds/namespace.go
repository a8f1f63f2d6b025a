package kinds

import (
	"context"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
)

// Namespace defines the Namespace kind: cluster-scoped, Active while live
// and Terminating once deleted, until everything in it is gone.
func Namespace() registry.Kind {
	return registry.Define(registry.Spec[*api.Namespace]{
		Kind:       api.KindNamespace,
		ShortNames: []string{"ns"},
		Fields:     []string{"status"},
		Columns: []api.Column{
			{Name: "STATUS", Path: ".status.phase"},
			{Name: "AGE", Path: ".metadata.creationTimestamp", Format: "age"},
		},
		PrepareForCreate: func(_ context.Context, _ *registry.Admission, ns *api.Namespace) error {
			ns.Status.Phase = api.NamespaceActive
			return nil
		},
		PrepareForDelete: func(_ context.Context, _ *registry.Admission, ns *api.Namespace) error {
			ns.Status.Phase = api.NamespaceTerminating
			return nil
		},
	})
}

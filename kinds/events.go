package kinds

import (
	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
)

// Project defines the Project kind.
func Project() registry.Kind {
	return registry.Define(registry.Spec[*api.Project]{
		Kind: api.KindProject, Namespaced: true, ShortNames: []string{"proj"}, Fields: []string{"spec"},
		Columns: []api.Column{age},
	})
}

// Event defines the Event kind.
func Event() registry.Kind {
	return registry.Define(registry.Spec[*api.Event]{
		Kind: api.KindEvent, Namespaced: true, ShortNames: []string{"ev"}, Fields: []string{"spec", "status"},
		Columns: []api.Column{{Name: "PROJECT", Path: ".spec.project"}, {Name: "WORKER", Path: ".status.worker.phase"}, age},
	})
}

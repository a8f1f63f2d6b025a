package kinds

import (
	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
)

// Execution defines the Execution kind.
func Execution() registry.Kind {
	return registry.Define(registry.Spec[*api.Execution]{
		Kind: api.KindExecution, Namespaced: true, ShortNames: []string{"exec"}, Fields: []string{"spec", "status"},
		Columns: []api.Column{{Name: "PHASE", Path: ".status.phase"}, {Name: "ITEMS", Path: ".status.ready"}, age},
	})
}

// DeployItem defines the DeployItem kind.
func DeployItem() registry.Kind {
	return registry.Define(registry.Spec[*api.DeployItem]{
		Kind: api.KindDeployItem, Namespaced: true, ShortNames: []string{"di"}, Fields: []string{"spec", "status"},
		Columns: []api.Column{{Name: "TYPE", Path: ".spec.type"}, {Name: "PHASE", Path: ".status.phase"}, age},
	})
}

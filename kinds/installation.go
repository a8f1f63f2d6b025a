package kinds

import (
	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
)

// The deployment kinds that describe what to deploy: Target, DataObject,
// Blueprint and Installation (execution.go has the others).

// age is the AGE column every kind ends with.
var age = api.Column{Name: "AGE", Path: ".metadata.creationTimestamp", Format: "age"}

// Target defines the Target kind: where deploy items deploy to.
func Target() registry.Kind {
	return registry.Define(registry.Spec[*api.Target]{
		Kind: api.KindTarget, Namespaced: true, Fields: []string{"spec"},
		Columns: []api.Column{{Name: "TYPE", Path: ".spec.type"}, age}, Validate: validateTarget,
	})
}

// DataObject defines the DataObject kind: data in an installation context.
func DataObject() registry.Kind {
	return registry.Define(registry.Spec[*api.DataObject]{
		Kind: api.KindDataObject, Namespaced: true, ShortNames: []string{"do"}, Fields: []string{"data"},
		Columns: []api.Column{age},
	})
}

// Blueprint defines the Blueprint kind: a reusable deployment description.
func Blueprint() registry.Kind {
	return registry.Define(registry.Spec[*api.Blueprint]{
		Kind: api.KindBlueprint, Namespaced: true, ShortNames: []string{"bp"}, Fields: []string{"spec"},
		Columns: []api.Column{age},
	})
}

// Installation defines the Installation kind.
func Installation() registry.Kind {
	return registry.Define(registry.Spec[*api.Installation]{
		Kind: api.KindInstallation, Namespaced: true, ShortNames: []string{"inst"}, Fields: []string{"spec", "status"},
		Columns: []api.Column{{Name: "PHASE", Path: ".status.phase"}, {Name: "EXECUTION", Path: ".status.executionRef"}, age},
	})
}

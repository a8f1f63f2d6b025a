// Package kinds registers every kind cairn serves: its Go type, defaults,
// validation and printer columns, in one place per kind. Later kinds are
// added here.
package kinds

import "cairn.dev/cairn/registry"

// All returns the definitions of every served kind.
func All() []registry.Kind {
	return []registry.Kind{
		Namespace(),
		Secret(),
		Lease(),
	}
}

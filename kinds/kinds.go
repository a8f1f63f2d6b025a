// Package kinds registers every kind cairn serves: its Go type, defaults,
// validation, authorization and printer columns, in one place per kind.
// Later kinds are added here.
package kinds

import (
	"time"

	"cairn.dev/cairn/registry"
)

// Deps are what the kinds need from the process that serves them. Kinds
// get them here, when they are built, never from globals. Later kinds add
// theirs (the authenticator, the runtime).
type Deps struct {
	// Now returns the current time (nil: time.Now), for kinds whose hooks
	// set or compare times.
	Now func() time.Time
	// EventActions are the event endpoints (package event's
	// Service.Actions): without them the Event kind serves only the plain
	// verbs.
	EventActions []registry.Action
	// EventRemoveWrites remove an event's system records with it (package
	// event's Service.RemoveWrites); nil: events have none.
	EventRemoveWrites registry.RemoveHook
	// DeployItemActions are the deploy item endpoints (package logsource's
	// Source.DeployItemActions: its logs); nil: only the plain verbs.
	DeployItemActions []registry.Action
}

// All returns the definitions of every served kind, built with d. (The
// Namespace and Secret kinds need nothing from d.)
func All(d Deps) []registry.Kind {
	return []registry.Kind{
		Namespace(),
		Secret(),
		Lease(),
		Target(),
		DataObject(),
		Blueprint(),
		everyday(Installation()),
		everyday(Execution()),
		everyday(withActions(DeployItem(), d.DeployItemActions)),
		everyday(Project()),
		everyday(eventKind(d.EventActions, d.EventRemoveWrites)),
		everyday(Cleaner(d)),
		Gateway(),
	}
}

// withActions adds acts to k's endpoints.
func withActions(k registry.Kind, acts []registry.Action) registry.Kind {
	k.Actions = append(k.Actions, acts...)
	return k
}

// everyday puts k in the "all" category: the kinds `kubectl get all`
// shows, those users work with day to day.
func everyday(k registry.Kind) registry.Kind {
	k.Categories = append(k.Categories, "all")
	return k
}

package api

import (
	"slices"
	"strings"
)

// Kind names. Every kind cairn serves has its name declared here once;
// code refers to kinds through these constants, never through literals.
const (
	KindNamespace = "Namespace"
	KindSecret    = "Secret"
	// KindLease holds a leader election's state (the controllers' leader
	// among `cairn server` and `cairn controller-manager` processes).
	KindLease = "Lease"

	// The deployment kinds.
	KindTarget       = "Target"
	KindDataObject   = "DataObject"
	KindBlueprint    = "Blueprint"
	KindInstallation = "Installation"
	KindExecution    = "Execution"
	KindDeployItem   = "DeployItem"

	// The event kinds.
	KindProject = "Project"
	KindEvent   = "Event"
)

// ResolveKind finds what a user or a caller typed — a kind name
// ("Secret"), its plural ("secrets") or a short name ("ns"), in any case —
// among kinds. An exact kind name wins over a case-insensitive match. It is
// the one resolver of kind names: the registry, the HTTP client and the CLI
// all use it.
func ResolveKind(kinds []KindInfo, name string) (KindInfo, bool) {
	if name == "" {
		return KindInfo{}, false
	}
	for _, k := range kinds {
		if k.Kind == name || k.Plural == name {
			return k, true
		}
	}
	for _, k := range kinds {
		if strings.EqualFold(k.Kind, name) || strings.EqualFold(k.Plural, name) ||
			slices.ContainsFunc(k.ShortNames, func(s string) bool { return strings.EqualFold(s, name) }) {
			return k, true
		}
	}
	return KindInfo{}, false
}

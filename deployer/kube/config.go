package kube

import "cairn.dev/cairn/deployer/kube/config"

// The config types, declared in package config (which admission imports
// too); see there.
type (
	ObjectRef       = config.ObjectRef
	Readiness       = config.Readiness
	CustomCheck     = config.CustomCheck
	Export          = config.Export
	Policy          = config.Policy
	ManagedResource = config.ManagedResource
	ProviderStatus  = config.ProviderStatus
)

// The policies of a manifest entry (config.Policy*).
const (
	PolicyManage = config.PolicyManage
	PolicyKeep   = config.PolicyKeep
	PolicyIgnore = config.PolicyIgnore
)

// ParsePolicy is config.ParsePolicy.
func ParsePolicy(p string) (Policy, error) { return config.ParsePolicy(p) }

// ValidateReadiness is config.ValidateReadiness.
func ValidateReadiness(r Readiness, at string) error { return config.ValidateReadiness(r, at) }

// ValidateExports is config.ValidateExports.
func ValidateExports(ex []Export, at string, allowFromValues bool) error {
	return config.ValidateExports(ex, at, allowFromValues)
}

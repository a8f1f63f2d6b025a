// Package config is the configuration of cairn's Kubernetes deploy item
// types (manifest, helm) and its validation: plain types and functions
// with no I/O, which admission (package kinds) and the deployers share.
package config

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/client-go/util/jsonpath"
)

// ObjectRef names one object of a cluster. Namespace is empty for
// cluster-scoped objects (and for namespaced ones, the deployer's default
// namespace).
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace,omitempty"`
}

// String is "Kind namespace/name" (or "Kind name").
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// validate refuses a ref lacking a field, naming it under at.
func (r ObjectRef) validate(at string) error {
	switch {
	case r.APIVersion == "":
		return fmt.Errorf("%s.apiVersion is required", at)
	case r.Kind == "":
		return fmt.Errorf("%s.kind is required", at)
	case r.Name == "":
		return fmt.Errorf("%s.name is required", at)
	}
	return nil
}

// Readiness is the `readiness` of a manifest or helm config.
type Readiness struct {
	// Disabled: no check at all, the item succeeds once applied.
	Disabled bool `json:"disabled,omitempty"`
	// Custom checks run besides the default ones.
	Custom []CustomCheck `json:"custom,omitempty"`
}

// CustomCheck is ready when the value at JSONPath in Resource is one of
// In (compared as JSON values).
type CustomCheck struct {
	Name     string            `json:"name"`
	Resource ObjectRef         `json:"resource"`
	JSONPath string            `json:"jsonPath"`
	In       []json.RawMessage `json:"in"`
}

// Export is one entry of `exports`: the value at JSONPath in Resource, or
// (helm only) at FromValues in the release's values, exported as Key.
type Export struct {
	Key        string     `json:"key"`
	Resource   *ObjectRef `json:"resource,omitempty"`
	JSONPath   string     `json:"jsonPath,omitempty"`
	FromValues string     `json:"fromValues,omitempty"`
}

// Policy says what a deployer does with one object it applies.
type Policy string

// The policies of a manifest entry.
const (
	// PolicyManage: applied, updated, deleted with the item (default).
	PolicyManage Policy = "manage"
	// PolicyKeep: applied and updated, left in the cluster on deletion
	// or when no longer rendered.
	PolicyKeep Policy = "keep"
	// PolicyIgnore: created when missing, never changed or deleted.
	PolicyIgnore Policy = "ignore"
)

// ParsePolicy returns the policy p names, PolicyManage for "". The error
// lists the policies.
func ParsePolicy(p string) (Policy, error) {
	switch Policy(p) {
	case "":
		return PolicyManage, nil
	case PolicyManage, PolicyKeep, PolicyIgnore:
		return Policy(p), nil
	}
	return "", fmt.Errorf("policy %q is not one of manage, keep, ignore", p)
}

// Deletes reports whether objects of policy p are deleted with the item
// (and pruned when no longer rendered).
func (p Policy) Deletes() bool { return p == PolicyManage || p == "" }

// ManagedResource is one entry of status.providerStatus.managedResources:
// an object a deployer applied, with its policy and whether it was ready
// at the last check.
type ManagedResource struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
	Policy     Policy `json:"policy,omitempty"`
	// Ready is the object's readiness at the last check.
	Ready bool `json:"ready"`
	// Message says why it is not ready, or what blocks its deletion.
	Message string `json:"message,omitempty"`
}

// Ref is the object r names.
func (r ManagedResource) Ref() ObjectRef {
	return ObjectRef{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, Namespace: r.Namespace}
}

// ProviderStatus is the part of status.providerStatus the Kubernetes
// deployers share (helm adds its release to it).
type ProviderStatus struct {
	ManagedResources []ManagedResource `json:"managedResources,omitempty"`
	// Ready is "ready/total" of ManagedResources (`cairn get`'s OBJECTS
	// column); SetReady computes it.
	Ready string `json:"ready,omitempty"`
}

// SetReady sets Ready from ManagedResources.
func (s *ProviderStatus) SetReady() {
	r, t := s.Counts()
	s.Ready = fmt.Sprintf("%d/%d", r, t)
}

// Counts returns how many managed objects were ready at the last check,
// and how many there are.
func (s ProviderStatus) Counts() (ready, total int) {
	for _, r := range s.ManagedResources {
		if r.Ready {
			ready++
		}
	}
	return ready, len(s.ManagedResources)
}

// ValidateReadiness refuses a readiness config that cannot be checked,
// naming the field under at ("config.readiness").
func ValidateReadiness(r Readiness, at string) error {
	for i, c := range r.Custom {
		ci := fmt.Sprintf("%s.custom[%d]", at, i)
		if err := c.Resource.validate(ci + ".resource"); err != nil {
			return err
		}
		if err := validPath(c.JSONPath, ci+".jsonPath"); err != nil {
			return err
		}
		if len(c.In) == 0 {
			return fmt.Errorf("%s.in is required: the values that mean ready", ci)
		}
	}
	return nil
}

// ValidateExports refuses exports that cannot be read, naming the field
// under at ("config.exports"); fromValues only when allowFromValues.
func ValidateExports(ex []Export, at string, allowFromValues bool) error {
	seen := map[string]bool{}
	for i, e := range ex {
		ei := fmt.Sprintf("%s[%d]", at, i)
		switch {
		case e.Key == "":
			return fmt.Errorf("%s.key is required", ei)
		case seen[e.Key]:
			return fmt.Errorf("%s.key %q is exported twice", ei, e.Key)
		case e.FromValues != "" && !allowFromValues:
			return fmt.Errorf("%s.fromValues is for helm items only: use resource and jsonPath", ei)
		case e.FromValues != "" && e.Resource != nil:
			return fmt.Errorf("%s: set either fromValues or resource, not both", ei)
		case e.FromValues != "":
			if err := validPath(e.FromValues, ei+".fromValues"); err != nil {
				return err
			}
		case e.Resource == nil:
			return fmt.Errorf("%s.resource is required", ei)
		default:
			if err := e.Resource.validate(ei + ".resource"); err != nil {
				return err
			}
			if err := validPath(e.JSONPath, ei+".jsonPath"); err != nil {
				return err
			}
		}
		seen[e.Key] = true
	}
	return nil
}

// validPath refuses an empty or unparsable JSONPath, naming the field.
func validPath(p, at string) error {
	if strings.TrimSpace(p) == "" {
		return fmt.Errorf("%s is required", at)
	}
	if _, err := ParsePath(p); err != nil {
		return fmt.Errorf("%s %q does not parse: %v", at, p, err)
	}
	return nil
}

// ParsePath parses a kubectl JSONPath; the braces around it are optional
// (".status.phase" is "{.status.phase}").
func ParsePath(p string) (*jsonpath.JSONPath, error) {
	p = strings.TrimSpace(p)
	if !strings.HasPrefix(p, "{") {
		p = "{" + p + "}"
	}
	jp := jsonpath.New("path")
	if err := jp.Parse(p); err != nil {
		return nil, err
	}
	return jp, nil
}

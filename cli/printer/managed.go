package printer

import (
	"encoding/json"
	"fmt"
)

// ManagedObjects lists the objects a Kubernetes deploy item manages, from
// its status (status.providerStatus.managedResources), one line each:
// "Kind namespace/name (policy): ready", or "not ready: why" (or what
// blocks its deletion). Nil for a status of another shape. Lines are not
// escaped.
func ManagedObjects(status json.RawMessage) []string {
	var st struct {
		ProviderStatus struct {
			ManagedResources []struct {
				Kind, Namespace, Name, Policy, Message string
				Ready                                  bool
			} `json:"managedResources"`
		} `json:"providerStatus"`
	}
	if json.Unmarshal(status, &st) != nil {
		return nil
	}
	var out []string
	for _, r := range st.ProviderStatus.ManagedResources {
		name := r.Name
		if r.Namespace != "" {
			name = r.Namespace + "/" + name
		}
		state := "ready"
		switch {
		case !r.Ready && r.Message != "":
			state = "not ready: " + r.Message
		case !r.Ready:
			state = "not ready"
		case r.Message != "":
			state = r.Message
		}
		out = append(out, fmt.Sprintf("%s %s (%s): %s", r.Kind, name, r.Policy, state))
	}
	return out
}

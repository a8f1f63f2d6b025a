package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// TypeManifest is the deploy item type of the manifest deployer.
const TypeManifest = "manifest"

// Manifest is the config of a manifest deploy item.
type Manifest struct {
	// Namespace is the namespace of namespaced objects that name none.
	Namespace string          `json:"namespace,omitempty"`
	Manifests []ManifestEntry `json:"manifests"`
	Readiness Readiness       `json:"readiness,omitzero"`
	Exports   []Export        `json:"exports,omitempty"`
}

// ManifestEntry is one object to apply and its policy.
type ManifestEntry struct {
	Policy   string          `json:"policy,omitempty"`
	Manifest json.RawMessage `json:"manifest"`
}

// Object is one entry of a manifest config, checked: its object (as
// decoded JSON) and its policy.
type Object struct {
	Object map[string]any
	Policy Policy
	// Ref names the object (namespace as written, possibly empty).
	Ref ObjectRef
}

// ParseManifest decodes and checks a manifest deploy item's config. The
// error names the field at fault ("config.manifests[2].manifest: kind is
// required") and the fix.
func ParseManifest(raw json.RawMessage) (Manifest, []Object, error) {
	var m Manifest
	if len(bytes.TrimSpace(raw)) == 0 {
		return m, nil, fmt.Errorf("config is required: {manifests: [{manifest: {...}}]}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, nil, fmt.Errorf("config does not decode as a manifest config: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	objs := make([]Object, 0, len(m.Manifests))
	seen := map[ObjectRef]int{}
	for i, e := range m.Manifests {
		o, err := parseEntry(e, fmt.Sprintf("config.manifests[%d]", i))
		if err != nil {
			return m, nil, err
		}
		if j, dup := seen[o.Ref]; dup {
			return m, nil, fmt.Errorf("config.manifests[%d]: %s is also config.manifests[%d]", i, o.Ref, j)
		}
		seen[o.Ref] = i
		objs = append(objs, o)
	}
	if err := ValidateReadiness(m.Readiness, "config.readiness"); err != nil {
		return m, nil, err
	}
	if err := ValidateExports(m.Exports, "config.exports", false); err != nil {
		return m, nil, err
	}
	return m, objs, nil
}

// parseEntry checks one entry: an object with apiVersion, kind and
// metadata.name, and a known policy.
func parseEntry(e ManifestEntry, at string) (Object, error) {
	p, err := ParsePolicy(e.Policy)
	if err != nil {
		return Object{}, fmt.Errorf("%s.%v", at, err)
	}
	var obj map[string]any
	if len(bytes.TrimSpace(e.Manifest)) == 0 || e.Manifest[0] != '{' || json.Unmarshal(e.Manifest, &obj) != nil {
		return Object{}, fmt.Errorf("%s.manifest is not an object: give a Kubernetes object with apiVersion, kind and metadata.name", at)
	}
	str := func(v any) string { s, _ := v.(string); return s }
	meta, _ := obj["metadata"].(map[string]any)
	ref := ObjectRef{APIVersion: str(obj["apiVersion"]), Kind: str(obj["kind"]), Name: str(meta["name"]), Namespace: str(meta["namespace"])}
	switch {
	case ref.APIVersion == "":
		return Object{}, fmt.Errorf("%s.manifest.apiVersion is required", at)
	case ref.Kind == "":
		return Object{}, fmt.Errorf("%s.manifest.kind is required", at)
	case ref.Name == "":
		return Object{}, fmt.Errorf("%s.manifest.metadata.name is required (generateName is not supported: the deployer must find the object again)", at)
	}
	return Object{Object: obj, Policy: p, Ref: ref}, nil
}

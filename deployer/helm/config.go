package helm

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer/kube"
)

// Config is a helm deploy item's spec.config (DESIGN.md, "Kubernetes").
type Config struct {
	// Chart says where the chart comes from: exactly one source.
	Chart ChartSource `json:"chart"`
	// Release names the Helm release; its name defaults to the item's.
	Release ReleaseRef `json:"release,omitempty"`
	// CreateNamespace creates the release namespace when missing.
	CreateNamespace bool `json:"createNamespace,omitempty"`
	// Values are the release's values (any JSON object).
	Values json.RawMessage `json:"values,omitempty"`
	// Readiness of the release's objects, as for the manifest deployer.
	Readiness kube.Readiness `json:"readiness,omitempty"`
	// Exports read from the release's values (fromValues) or objects.
	Exports []kube.Export `json:"exports,omitempty"`
}

// ChartSource is one of an archive, a chart repository or an OCI
// reference.
type ChartSource struct {
	Archive    *ArchiveSource    `json:"archive,omitempty"`
	Repository *RepositorySource `json:"repository,omitempty"`
	// Ref is an OCI reference, oci://host/path/name:version.
	Ref string `json:"ref,omitempty"`
}

// ArchiveSource is a packaged chart (.tgz): inline (base64) or in a
// Secret of the item's namespace.
type ArchiveSource struct {
	Inline    string            `json:"inline,omitempty"`
	SecretRef *api.SecretKeyRef `json:"secretRef,omitempty"`
}

// RepositorySource is a chart in a chart repository (an index.yaml over
// HTTP(S)).
type RepositorySource struct {
	URL     string `json:"url"`
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Credentials name a Secret with the keys username and password, sent
	// as HTTP basic authentication to the repository.
	Credentials *Credentials `json:"credentials,omitempty"`
}

// Credentials name the Secret holding a username and a password.
type Credentials struct {
	SecretRef api.SecretKeyRef `json:"secretRef"`
}

// ReleaseRef names a Helm release.
type ReleaseRef struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// Secret keys of repository credentials.
const (
	KeyUsername = "username"
	KeyPassword = "password"
	// KeyChart is the default key of an archive's secretRef.
	KeyChart = "chart"
)

// errConfig marks a config that cannot work; its message names the field.
var errConfig = errors.New("invalid helm config")

// ParseConfig decodes and checks a helm item's config; item names the
// deploy item, whose name is the release's by default. Errors wrap
// errConfig and name the field at fault and the fix.
func ParseConfig(raw json.RawMessage, item string) (Config, error) {
	var cfg Config
	if len(raw) == 0 {
		return cfg, fmt.Errorf("%w: spec.config is required: {chart: {archive|repository|ref}, release, values}", errConfig)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("%w: spec.config does not decode as a helm config: %v", errConfig, err)
	}
	if cfg.Release.Name == "" {
		cfg.Release.Name = item
	}
	return cfg, cfg.check()
}

// check names the first field that cannot work.
func (c Config) check() error {
	n := 0
	if c.Chart.Archive != nil {
		n++
	}
	if c.Chart.Repository != nil {
		n++
	}
	if c.Chart.Ref != "" {
		n++
	}
	if n != 1 {
		return fmt.Errorf("%w: spec.config.chart needs exactly one of archive, repository or ref (it has %d)", errConfig, n)
	}
	if a := c.Chart.Archive; a != nil {
		if (a.Inline == "") == (a.SecretRef == nil) {
			return fmt.Errorf("%w: spec.config.chart.archive needs exactly one of inline (a base64 .tgz) or secretRef", errConfig)
		}
		if a.Inline != "" {
			if _, err := base64.StdEncoding.DecodeString(a.Inline); err != nil {
				return fmt.Errorf("%w: spec.config.chart.archive.inline is not base64: encode the .tgz with base64 -w0", errConfig)
			}
		}
		if a.SecretRef != nil && a.SecretRef.Name == "" {
			return fmt.Errorf("%w: spec.config.chart.archive.secretRef.name is required", errConfig)
		}
	}
	if r := c.Chart.Repository; r != nil {
		switch {
		case !strings.HasPrefix(r.URL, "http://") && !strings.HasPrefix(r.URL, "https://"):
			return fmt.Errorf("%w: spec.config.chart.repository.url must be an http:// or https:// URL, got %q", errConfig, r.URL)
		case r.Name == "":
			return fmt.Errorf("%w: spec.config.chart.repository.name is required: the chart's name in the repository's index.yaml", errConfig)
		case r.Credentials != nil && r.Credentials.SecretRef.Name == "":
			return fmt.Errorf("%w: spec.config.chart.repository.credentials.secretRef.name is required", errConfig)
		}
	}
	if c.Chart.Ref != "" && !strings.HasPrefix(c.Chart.Ref, "oci://") {
		return fmt.Errorf("%w: spec.config.chart.ref must be an oci:// reference, got %q", errConfig, c.Chart.Ref)
	}
	if errs := validation.IsDNS1123Subdomain(c.Release.Name); len(errs) > 0 || len(c.Release.Name) > 53 {
		return fmt.Errorf("%w: spec.config.release.name %q is not a valid Helm release name (a DNS-1123 name of at most 53 characters)", errConfig, c.Release.Name)
	}
	if ns := c.Release.Namespace; ns != "" {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("%w: spec.config.release.namespace %q is not a namespace name: %s", errConfig, ns, strings.Join(errs, "; "))
		}
	}
	if len(c.Values) > 0 && string(c.Values) != "null" {
		var m map[string]any
		if err := json.Unmarshal(c.Values, &m); err != nil {
			return fmt.Errorf("%w: spec.config.values must be an object (Helm values), not %s", errConfig, jsonKind(c.Values))
		}
	}
	if err := kube.ValidateReadiness(c.Readiness, "spec.config.readiness"); err != nil {
		return fmt.Errorf("%w: %v", errConfig, err)
	}
	if err := kube.ValidateExports(c.Exports, "spec.config.exports", true); err != nil {
		return fmt.Errorf("%w: %v", errConfig, err)
	}
	return nil
}

// values returns the release's values as a map (empty when none).
func (c Config) values() (map[string]any, error) {
	m := map[string]any{}
	if len(c.Values) == 0 || string(c.Values) == "null" {
		return m, nil
	}
	if err := json.Unmarshal(c.Values, &m); err != nil {
		return nil, fmt.Errorf("%w: spec.config.values must be an object", errConfig)
	}
	return m, nil
}

func jsonKind(raw json.RawMessage) string {
	switch t := bytes.TrimSpace(raw); {
	case len(t) == 0:
		return "empty"
	case t[0] == '[':
		return "an array"
	case t[0] == '"':
		return "a string"
	default:
		return "a scalar"
	}
}

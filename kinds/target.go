package kinds

import (
	"bytes"
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
)

// The Target kind's type-specific rules: the config of the types cairn
// knows (kubernetes-cluster); other types' configs are their deployers'.

// validateTargetConfig checks the config of a Target whose type cairn
// knows, naming the field at fault.
func validateTargetConfig(t *api.Target) field.ErrorList {
	if t.Spec.Type != api.TargetTypeKubernetesCluster {
		return nil
	}
	p := field.NewPath("spec", "config")
	if len(bytes.TrimSpace(t.Spec.Config)) == 0 || string(bytes.TrimSpace(t.Spec.Config)) == "null" {
		return field.ErrorList{field.Required(p, `a kubernetes-cluster target needs {"kubeconfig": {"secretRef": {"name": SECRET, "key": KEY}}}`)}
	}
	cfg, err := decodeKubernetesCluster(t.Spec.Config)
	if err != nil {
		return field.ErrorList{field.Invalid(p, "", `must be {"kubeconfig": {"secretRef": {"name": SECRET, "key": KEY}}}: `+strings.TrimPrefix(err.Error(), "json: "))}
	}
	ref := p.Child("kubeconfig", "secretRef")
	var errs field.ErrorList
	if cfg.Kubeconfig.SecretRef.Name == "" {
		errs = append(errs, field.Required(ref.Child("name"), "the name of the Secret holding the kubeconfig"))
	}
	for _, msg := range validation.IsDNS1123Subdomain(cfg.Kubeconfig.SecretRef.Name) {
		if cfg.Kubeconfig.SecretRef.Name != "" {
			errs = append(errs, field.Invalid(ref.Child("name"), cfg.Kubeconfig.SecretRef.Name, msg))
		}
	}
	if k := cfg.Kubeconfig.SecretRef.Key; k != "" {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(ref.Child("key"), k, msg))
		}
	}
	return errs
}

// decodeKubernetesCluster decodes a kubernetes-cluster config, refusing
// unknown fields.
func decodeKubernetesCluster(raw json.RawMessage) (api.KubernetesClusterConfig, error) {
	var cfg api.KubernetesClusterConfig
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(&cfg)
	return cfg, err
}

// actsOfTarget: a kubernetes-cluster Target makes cairn read its
// kubeconfig Secret.
func actsOfTarget(t *api.Target) []authz.Attributes {
	if t.Spec.Type != api.TargetTypeKubernetesCluster {
		return nil
	}
	cfg, err := decodeKubernetesCluster(t.Spec.Config)
	if err != nil || cfg.Kubeconfig.SecretRef.Name == "" {
		return nil
	}
	return []authz.Attributes{{Verb: authz.VerbGet, Kind: api.KindSecret, Name: cfg.Kubeconfig.SecretRef.Name}}
}

package kinds

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	kubeconfig "cairn.dev/cairn/deployer/kube/config"
)

// validateDeployConfig checks the config of a deploy item of a type whose
// config admission knows (manifest), at p ("spec.config"). It runs where
// the config is static: on Executions and DeployItems that no controller
// rendered (a rendered one that is bad fails its deploy item instead,
// naming the entry).
func validateDeployConfig(meta *api.ObjectMeta, p *field.Path, typ string, config json.RawMessage) field.ErrorList {
	if meta.ControllerRef() != nil {
		return nil
	}
	switch typ {
	case kubeconfig.TypeManifest:
		if _, _, err := kubeconfig.ParseManifest(config); err != nil {
			return field.ErrorList{field.Invalid(p, "", err.Error())}
		}
	}
	return nil
}

package manifest

import (
	"context"
	"fmt"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer"
	"cairn.dev/cairn/deployer/kube/config"
)

// parse decodes the item's config with its Secret references resolved
// (deployer's Item.ResolveConfig, as the item's creator), for the objects
// applied to the cluster alone, and returns the values put in for the
// redactor. The config is checked as written first, so that an error
// quotes a reference, never a value. A finished Outcome says why the item
// fails (an invalid config, a Secret missing or its creator may not read);
// an error is worth a retry.
func parse(ctx context.Context, item *deployer.Item) (config.Manifest, []config.Object, []string, *deployer.Outcome, error) {
	fail := func(o deployer.Outcome) (config.Manifest, []config.Object, []string, *deployer.Outcome, error) {
		return config.Manifest{}, nil, nil, &o, nil
	}
	m, objs, err := config.ParseManifest(item.Spec.Config)
	if err != nil {
		return fail(deployer.Failed(api.ReasonInvalidConfig, "%v", err))
	}
	res, err := item.ResolveConfig(ctx)
	if out, ok := deployer.SecretFailure(err); ok {
		return fail(out)
	}
	if err != nil {
		return config.Manifest{}, nil, nil, nil, fmt.Errorf("manifest: %w", err)
	}
	if len(res.Values) == 0 {
		return m, objs, nil, nil, nil
	}
	if m, objs, err = config.ParseManifest(res.Config); err != nil {
		return fail(deployer.Failed(api.ReasonInvalidConfig, "%s", secretValues(nil, res.Values).String(err.Error())))
	}
	return m, objs, res.Values, nil, nil
}

package helm

import (
	"context"
	"fmt"
	"slices"

	release "helm.sh/helm/v4/pkg/release/v1"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer"
)

// resolve sets the session's values: spec.config.values with the Secret
// references of the item's config resolved (deployer's
// Item.ResolveConfig, as the item's creator). Only Helm gets them (they
// go into the release in the target cluster); the redactor knows them;
// the digest and exports fromValues read the values as written
// (references). A finished Outcome says why the item fails (a Secret
// missing or its creator may not read); an error is worth a retry.
func (s *session) resolve(ctx context.Context, item *deployer.Item) (*deployer.Outcome, error) {
	res, err := item.ResolveConfig(ctx)
	if out, ok := deployer.SecretFailure(err); ok {
		return &out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("helm: %w", err)
	}
	if len(res.Values) == 0 {
		return nil, nil
	}
	cfg, err := ParseConfig(res.Config, s.cfg.Release.Name)
	if err == nil {
		s.values, err = cfg.values()
	}
	if err != nil {
		out := deployer.Failed(api.ReasonInvalidConfig, "spec.config with its Secret references resolved: %s", newRedactor(map[string]any{"v": anys(res.Values)}).String(err.Error()))
		return &out, nil
	}
	s.red = newRedactor(s.values)
	for _, v := range res.Values { // a value inside a longer string, too
		if len(v) >= minRedacted {
			s.red = append(s.red, v)
		}
	}
	slices.SortFunc(s.red, func(a, b string) int { return len(b) - len(a) })
	return nil, nil
}

// written returns rel with the values as the config writes them (Secret
// references, not their values), for reading exports fromValues.
func (s *session) written(rel *release.Release) *release.Release {
	w, _ := s.cfg.values()
	c := *rel
	c.Config = w
	return &c
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

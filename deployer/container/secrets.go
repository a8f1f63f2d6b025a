package container

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer"
)

// resolve checks that cfg's commands carry no Secret reference and then
// resolves the references of the item's config (deployer's
// Item.ResolveConfig, as the item's creator) into cfg: its env and imports
// hold the values, which reach the unit only in its 0600 imports file and
// its environment. A finished Outcome says why the item fails (a
// reference in a command, a Secret missing or its creator may not read);
// an error is worth a retry.
func resolve(ctx context.Context, item *deployer.Item, cfg *Config) (*deployer.Outcome, error) {
	if field, ok := referenceInCommand(*cfg); ok {
		out := deployer.Failed(api.ReasonInvalidConfig, "%s holds a Secret reference: a command line is visible to "+
			"whoever lists the host's processes; pass the value in spec.config.env or spec.config.imports instead", field)
		return &out, nil
	}
	res, err := item.ResolveConfig(ctx)
	if out, ok := deployer.SecretFailure(err); ok {
		return &out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("container: %w", err)
	}
	if len(res.Values) == 0 {
		return nil, nil
	}
	var resolved Config
	if err := json.Unmarshal(res.Config, &resolved); err != nil {
		return nil, fmt.Errorf("container: the resolved config does not decode")
	}
	cfg.Env, cfg.Imports = resolved.Env, resolved.Imports
	cfg.resolved, cfg.values = res.Config, slices.Clone(res.Values)
	// Longest first, so that a value containing another goes whole.
	slices.SortFunc(cfg.values, func(a, b string) int { return len(b) - len(a) })
	return nil, nil
}

// referenceInCommand names the first argument of cfg's commands that holds
// a Secret reference.
func referenceInCommand(cfg Config) (string, bool) {
	for _, c := range []struct {
		field string
		argv  []string
	}{{"spec.config.command", cfg.Command}, {"spec.config.deleteCommand", cfg.DeleteCommand}} {
		for i, a := range c.argv {
			if len(api.FindSecretReferences(a)) > 0 {
				return fmt.Sprintf("%s[%d]", c.field, i), true
			}
		}
	}
	return "", false
}

// configFile is the "config" of the imports file: spec.config, resolved.
func (c Config) configFile(item *deployer.Item) json.RawMessage {
	if c.resolved != nil {
		return c.resolved
	}
	return item.Spec.Config
}

// redact replaces each of values (the resolved Secret values) in msg, the
// output of a command bound for lastError.
func redact(msg string, values []string) string {
	for _, v := range values {
		if len(v) >= minRedacted {
			msg = strings.ReplaceAll(msg, v, "<redacted>")
		}
	}
	return msg
}

// minRedacted is the length below which a value is not redacted: it would
// mangle every message, and guessing it is no secret.
const minRedacted = 4

func deref(o *deployer.Outcome) deployer.Outcome {
	if o == nil {
		return deployer.Outcome{}
	}
	return *o
}

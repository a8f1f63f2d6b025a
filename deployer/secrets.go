package deployer

// Secret references in a deploy item's config (api.SecretReference): the
// library resolves them for a Deployer when it runs the item, reading each
// Secret as the item's creator.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// ErrSecretUnresolvable marks a Secret reference of an item's config that
// cannot be resolved for good: its Secret or key does not exist, or the
// item's creator may not read it. Its message names the Secret and why,
// never a value.
var ErrSecretUnresolvable = errors.New("a Secret reference of spec.config cannot be resolved")

// Resolved is an item's config with its Secret references replaced by the
// values. It is for the Deployer's work only: it must never be written into
// the item (spec or status), an export, a log, a trace or an error.
type Resolved struct {
	// Config is spec.config with every reference replaced by its value.
	Config json.RawMessage
	// Values are the values put in, for redacting messages.
	Values []string
}

// ResolveConfig returns item's spec.config with every Secret reference
// (api.SecretReference) replaced by the value of the Secret key it names,
// in the item's namespace, read through the API as the item's creator
// (api.ActFor): a reference whose Secret the creator may not read is
// refused, whoever runs the deployer. A config without references is
// returned as it is, with no read. It blocks on one read per Secret.
// Errors: ErrSecretUnresolvable (a missing Secret or key, a refusal: see
// SecretFailure); the API's other errors (worth a retry).
func (it *Item) ResolveConfig(ctx context.Context) (Resolved, error) {
	raw := it.Spec.Config
	if !api.HasSecretReference(raw) {
		return Resolved{Config: raw}, nil
	}
	if it.c == nil {
		return Resolved{}, errors.New("deployer: this item has no client to read the Secrets its config references")
	}
	secrets := map[string]*api.Secret{}
	lookup := func(r api.SecretReference) (string, error) {
		s, ok := secrets[r.Name]
		if !ok {
			var err error
			if s, err = it.readSecret(ctx, r.Name); err != nil {
				return "", err
			}
			secrets[r.Name] = s
		}
		v, ok := s.Data[r.Key]
		if !ok {
			return "", fmt.Errorf("%w: Secret %s in namespace %s has no key %q", ErrSecretUnresolvable, r.Name, it.Namespace, r.Key)
		}
		return string(v), nil
	}
	out, values, err := api.ResolveSecretReferences(raw, lookup)
	if err != nil {
		return Resolved{}, err
	}
	return Resolved{Config: out, Values: values}, nil
}

// readSecret reads Secret name of the item's namespace as the item.
func (it *Item) readSecret(ctx context.Context, name string) (*api.Secret, error) {
	obj, err := it.c.Get(api.ActFor(ctx, api.KindDeployItem, &it.ObjectMeta), api.KindSecret, it.Namespace, name)
	switch {
	case errors.Is(err, api.ErrNotFound):
		return nil, fmt.Errorf("%w: Secret %s does not exist in namespace %s", ErrSecretUnresolvable, name, it.Namespace)
	case errors.Is(err, api.ErrForbidden):
		return nil, fmt.Errorf("%w: Secret %s: %w", ErrSecretUnresolvable, name, err)
	case err != nil:
		return nil, fmt.Errorf("deployer: read Secret %s: %w", name, err)
	}
	s, err := client.Convert[*api.Secret](obj)
	if err != nil {
		return nil, fmt.Errorf("deployer: Secret %s does not decode", name)
	}
	return s, nil
}

// SecretFailure returns the Failed outcome of an ResolveConfig error that
// is for good (ErrSecretUnresolvable): reason Forbidden
// (api.ReasonCreatorForbidden) when the item's creator may not read the
// Secret, SecretNotFound otherwise. It returns false for other errors,
// which are worth a retry.
func SecretFailure(err error) (Outcome, bool) {
	if !errors.Is(err, ErrSecretUnresolvable) {
		return Outcome{}, false
	}
	reason := api.ReasonSecretNotFound
	if errors.Is(err, api.ErrForbidden) {
		reason = api.ReasonCreatorForbidden
	}
	return Failed(reason, "%v", err), true
}

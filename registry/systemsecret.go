package registry

import (
	"context"
	"errors"
	"fmt"

	"cairn.dev/cairn/store"
)

// systemSecretPrefix is where SystemSecret keeps its values, encrypted.
const systemSecretPrefix = "/cairn/meta/secrets/"

// SystemSecret returns the server-wide secret value name, created with
// create by whichever server asks first and the same for every server of
// the store since (e.g. the certificate authority TLS is served with). It
// is stored encrypted with the registry's key, under a key no API request
// reaches. It blocks on a store read, and on first use on create and one
// transaction. Errors: no encryption key, create's, the store's
// (store.ErrNoSpace on a full store that has none yet).
func (r *Registry) SystemSecret(ctx context.Context, name string, create func() ([]byte, error)) ([]byte, error) {
	if r.enc == nil {
		return nil, errors.New("registry: system secrets need an encryption key")
	}
	key := systemSecretPrefix + name
	for attempt := 0; attempt < 2; attempt++ {
		kv, err := r.store.Get(ctx, key)
		if err == nil {
			plain, err := r.enc.decrypt(kv.Value, key)
			if err != nil {
				return nil, fmt.Errorf("registry: system secret %s: %w", name, err)
			}
			return plain, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		plain, err := create()
		if err != nil {
			return nil, err
		}
		sealed, err := r.enc.encrypt(plain, key)
		if err != nil {
			return nil, err
		}
		_, err = r.store.Txn(ctx, []store.Cond{store.Absent(key)}, store.Put(key, sealed))
		switch {
		case err == nil:
			return plain, nil
		case !errors.Is(err, store.ErrPrecondition):
			return nil, err
		}
		// Another server created it first: read theirs.
	}
	return nil, fmt.Errorf("registry: system secret %s: created and gone again", name)
}

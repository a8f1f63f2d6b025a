package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"cairn.dev/cairn/store"
)

// SystemPrefix is where records that no API request reaches live (system
// secrets, events' records): the registry serves only KeyPrefix.
const SystemPrefix = "/cairn/meta/"

// SealedPut is the store write that puts plain at key, encrypted with the
// registry's key as a Secret's values are (the key is authenticated with
// it, so the value does not decrypt elsewhere). key must be under
// SystemPrefix. Put it in a Txn (Also). Errors: a key elsewhere, no
// encryption key.
func (r *Registry) SealedPut(key string, plain []byte) (store.Op, error) {
	if !strings.HasPrefix(key, SystemPrefix) {
		return store.Op{}, fmt.Errorf("registry: sealed key %s is not under %s", key, SystemPrefix)
	}
	if r.enc == nil {
		return store.Op{}, errors.New("registry: sealed records need an encryption key")
	}
	sealed, err := r.enc.encrypt(plain, key)
	if err != nil {
		return store.Op{}, err
	}
	return store.Put(key, sealed), nil
}

// ReadSealed reads the value SealedPut wrote at key, decrypted, with its
// mod revision (for store.Unchanged). It blocks on one store read.
// Errors: store.ErrNotFound, a value that does not decrypt, the store's.
func (r *Registry) ReadSealed(ctx context.Context, key string) ([]byte, int64, error) {
	if r.enc == nil {
		return nil, 0, errors.New("registry: sealed records need an encryption key")
	}
	kv, err := r.store.Get(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	plain, err := r.enc.decrypt(kv.Value, key)
	if err != nil {
		return nil, 0, fmt.Errorf("registry: sealed record %s: %w", key, err)
	}
	return plain, kv.ModRevision, nil
}

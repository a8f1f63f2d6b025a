package registry

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"cairn.dev/cairn/internal/privfile"
	"cairn.dev/cairn/store"
)

// encPrefix marks values encrypted at rest, with the scheme version.
var encPrefix = []byte("cairn:aes-gcm:v1:")

// keyIDKey records the fingerprint of the encryption key in use, so that a
// server started with another key refuses to run instead of failing to read
// secrets later.
const keyIDKey = "/cairn/meta/encryption-key-id"

// Encryption encrypts stored values with AES-256-GCM.
type Encryption struct {
	aead cipher.AEAD
	id   string
}

// NewEncryption builds an Encryption from a 32-byte key.
func NewEncryption(key []byte) (*Encryption, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("registry: encryption key must be 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("registry: encryption key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("registry: encryption key: %w", err)
	}
	sum := sha256.Sum256(key)
	return &Encryption{aead: aead, id: hex.EncodeToString(sum[:8])}, nil
}

// ErrKeyFileNotPrivate is returned by LoadOrCreateKey for a key file that
// users other than its owner may read, write or execute.
var ErrKeyFileNotPrivate = errors.New("registry: the encryption key file is open to other users")

// LoadOrCreateKey reads a base64-encoded 32-byte key from path, or, when the
// file does not exist, generates one and writes it with mode 0600. It
// fails with ErrKeyFileNotPrivate, naming the file, its mode and the fix,
// when the file exists with any permission for group or others; the key
// itself never appears in an error.
func LoadOrCreateKey(path string) (*Encryption, error) {
	raw, err := readPrivate(path)
	if errors.Is(err, os.ErrNotExist) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("registry: generate encryption key: %w", err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("registry: encryption key dir: %w", err)
		}
		enc := base64.StdEncoding.EncodeToString(key) + "\n"
		if err := os.WriteFile(path, []byte(enc), 0o600); err != nil {
			return nil, fmt.Errorf("registry: write encryption key: %w", err)
		}
		return NewEncryption(key)
	}
	if err != nil {
		return nil, err
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("registry: encryption key file %s is not base64: %w", path, err)
	}
	return NewEncryption(key)
}

// readPrivate reads the key file at path (see privfile.Read), refusing it
// when group or others have any permission on it. A missing file is an
// os.ErrNotExist.
func readPrivate(path string) ([]byte, error) {
	raw, err := privfile.Read(path)
	var np *privfile.NotPrivateError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, err
	case errors.As(err, &np):
		return nil, fmt.Errorf("%w: %s has mode %04o, so other users can read or change the key: run 'chmod 600 %s'",
			ErrKeyFileNotPrivate, path, np.Mode, path)
	case err != nil:
		return nil, fmt.Errorf("registry: read encryption key: %w", err)
	}
	return raw, nil
}

// ID is a short fingerprint of the key (never the key itself).
func (e *Encryption) ID() string { return e.id }

// encrypt seals plain for the etcd key it is stored under: the key is the
// additional authenticated data, so a value copied to another key does not
// decrypt.
func (e *Encryption) encrypt(plain []byte, key string) ([]byte, error) {
	nonce := make([]byte, e.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("registry: nonce: %w", err)
	}
	out := append(bytes.Clone(encPrefix), nonce...)
	return e.aead.Seal(out, nonce, plain, aad(key)), nil
}

func (e *Encryption) decrypt(data []byte, key string) ([]byte, error) {
	if !bytes.HasPrefix(data, encPrefix) {
		return nil, errors.New("registry: stored value is not encrypted")
	}
	data = data[len(encPrefix):]
	ns := e.aead.NonceSize()
	if len(data) < ns {
		return nil, errors.New("registry: encrypted value is truncated")
	}
	plain, err := e.aead.Open(nil, data[:ns], data[ns:], aad(key))
	if err != nil {
		return nil, errors.New("registry: cannot decrypt stored value: wrong encryption key, or a value moved from another key")
	}
	return plain, nil
}

func aad(key string) []byte { return append(bytes.Clone(encPrefix), key...) }

// verify records the key fingerprint on first use and fails when the store
// was written with a different key. It reads before it writes, so that a
// restart writes nothing (a full store refuses writes).
func (e *Encryption) verify(ctx context.Context, s *store.Store) error {
	kv, err := s.Get(ctx, keyIDKey)
	if errors.Is(err, store.ErrNotFound) {
		_, err = s.Txn(ctx, []store.Cond{store.Absent(keyIDKey)}, store.Put(keyIDKey, []byte(e.id)))
		if err == nil || !errors.Is(err, store.ErrPrecondition) {
			return err
		}
		kv, err = s.Get(ctx, keyIDKey)
	}
	if err != nil {
		return err
	}
	if string(kv.Value) != e.id {
		return fmt.Errorf("registry: the store's secrets were encrypted with key %s, but this server has key %s: "+
			"give every server the same --encryption-key-file", kv.Value, e.id)
	}
	return nil
}

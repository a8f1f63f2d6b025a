// Package auth authenticates API callers by bearer token.
//
// Tokens are never stored: etcd holds, under TokenPrefix + hex(sha256(token)),
// the JSON of the identity the token stands for. Registering and revoking a
// token are plain store operations (TokenOp, RevokeOp), so a feature can
// register a token in the same transaction as the objects it belongs to.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/privfile"
	"cairn.dev/cairn/store"
)

// TokenPrefix is the etcd prefix of registered token hashes.
const TokenPrefix = "/cairn/auth/tokens/"

// AdminUser is the identity of the admin token written by EnsureAdminToken.
func AdminUser() identity.User { return identity.User{Name: "admin", Admin: true} }

// DefaultCacheTTL bounds how long a positive authentication is reused
// without reading etcd, and therefore how long a token revoked by another
// process may still be accepted here.
const DefaultCacheTTL = 10 * time.Second

// retryAfterSeconds is what an answer that the store is unavailable
// suggests waiting.
const retryAfterSeconds = 1

// maxCacheEntries triggers a sweep of expired cache entries.
const maxCacheEntries = 10000

// record is the stored form of an identity.
type record struct {
	Name  string `json:"name"`
	Admin bool   `json:"admin,omitempty"`
	Scope string `json:"scope,omitempty"`
}

type cached struct {
	user    identity.User
	expires time.Time
}

// Authenticator checks bearer tokens against the hashes registered in etcd.
// It is safe for concurrent use.
type Authenticator struct {
	store *store.Store
	ttl   time.Duration
	now   func() time.Time

	mu    sync.Mutex
	cache map[string]cached // by token hash

	// scopeCheck, when set, is asked about every scoped identity on every
	// authentication (SetScopeCheck).
	scopeCheck ScopeCheck
}

// ScopeCheck decides whether a scoped token (the worker token of an Event)
// still works: it gets the token's hash and the identity it was registered
// as, and returns nil, or the error that refuses the request (an
// *api.Status, e.g. Forbidden when the token's event is gone or terminal). It
// may block on reads of the store, bounded by ctx.
type ScopeCheck func(ctx context.Context, tokenHash string, u identity.User) error

// SetScopeCheck makes Authenticate ask check about every identity with a
// Scope, on every call (the cache does not skip it), so that a scoped token
// stops working as soon as check says so. Call it before the Authenticator
// is used.
func (a *Authenticator) SetScopeCheck(check ScopeCheck) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.scopeCheck = check
}

// RevokeHashOp is the store operation that unregisters the token whose hash
// (Hash) is hash.
func RevokeHashOp(hash string) store.Op { return store.Del(TokenPrefix + hash) }

// New returns an Authenticator over s with the default cache TTL.
func New(s *store.Store) *Authenticator {
	return &Authenticator{store: s, ttl: DefaultCacheTTL, now: time.Now, cache: map[string]cached{}}
}

// SetCacheTTL changes how long positive results are cached; 0 disables the
// cache. Call it before the Authenticator is used.
func (a *Authenticator) SetCacheTTL(d time.Duration) { a.ttl = d }

// Hash returns the hex SHA-256 of token, the name it is registered under.
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func key(token string) string { return TokenPrefix + Hash(token) }

// NewToken returns a fresh random token (256 bits from crypto/rand, hex).
// It fails only when the system's random source does.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("auth: generate token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func encode(u identity.User) []byte {
	// Marshalling a struct of strings and a bool cannot fail.
	b, _ := json.Marshal(record{Name: u.Name, Admin: u.Admin, Scope: u.Scope})
	return b
}

// TokenOp is the store operation that registers token as u. Put it in a
// store.Txn, alone or together with other writes.
func TokenOp(token string, u identity.User) store.Op { return store.Put(key(token), encode(u)) }

// HashKey is the store key a token whose hash (Hash) is hash is registered
// under, for conditions on it (store.Absent).
func HashKey(hash string) string { return TokenPrefix + hash }

// HashOp is the store operation that registers the token whose hash (Hash)
// is hash as u, for a caller that never holds the token itself (the server
// registering a token a controller minted for a unit).
func HashOp(hash string, u identity.User) store.Op { return store.Put(HashKey(hash), encode(u)) }

// ValidHash reports whether s has the form of Hash's result: 64 lower-case
// hexadecimal digits.
func ValidHash(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// RevokeOp is the store operation that unregisters token. Other API server
// processes may keep accepting it for up to their cache TTL.
func RevokeOp(token string) store.Op { return store.Del(key(token)) }

// Register stores token as u (overwriting any earlier registration). It
// blocks on one etcd write and returns the store's error if it fails.
func (a *Authenticator) Register(ctx context.Context, token string, u identity.User) error {
	if _, err := a.store.Txn(ctx, nil, TokenOp(token, u)); err != nil {
		return fmt.Errorf("auth: register token: %w", err)
	}
	a.forget(token)
	return nil
}

// Revoke unregisters token and drops it from this Authenticator's cache. It
// blocks on one etcd write and returns the store's error if it fails.
func (a *Authenticator) Revoke(ctx context.Context, token string) error {
	if _, err := a.store.Txn(ctx, nil, RevokeOp(token)); err != nil {
		return fmt.Errorf("auth: revoke token: %w", err)
	}
	a.forget(token)
	return nil
}

func (a *Authenticator) forget(token string) {
	a.mu.Lock()
	delete(a.cache, Hash(token))
	a.mu.Unlock()
}

// Authenticate returns the identity token was registered as. A token seen
// within the cache TTL is answered from memory, without the store (a
// scoped identity is still passed to the scope check); otherwise it reads
// etcd once, bounded by the store timeout of ctx (store.WithTimeout). An
// empty or unknown token returns an Unauthorized *api.Status; a store
// failure (etcd unavailable, or no answer within the store timeout)
// returns a ServiceUnavailable *api.Status with RetryAfterSeconds. Neither
// error contains the token.
func (a *Authenticator) Authenticate(ctx context.Context, token string) (identity.User, error) {
	if token == "" {
		return identity.User{}, api.NewStatus(api.ReasonUnauthorized, "missing bearer token")
	}
	h := Hash(token)
	now := a.now()
	a.mu.Lock()
	c, ok := a.cache[h]
	a.mu.Unlock()
	if ok && now.Before(c.expires) {
		return a.checkScope(ctx, h, c.user)
	}
	kv, err := a.store.Get(ctx, TokenPrefix+h)
	if errors.Is(err, store.ErrNotFound) {
		a.mu.Lock()
		delete(a.cache, h)
		a.mu.Unlock()
		return identity.User{}, api.NewStatus(api.ReasonUnauthorized, "invalid bearer token")
	}
	if err != nil {
		if ctx.Err() != nil {
			return identity.User{}, ctx.Err()
		}
		return identity.User{}, api.NewUnavailable(retryAfterSeconds, "cannot check the bearer token: the store does not answer; retry")
	}
	var rec record
	if err := json.Unmarshal(kv.Value, &rec); err != nil || rec.Name == "" {
		return identity.User{}, api.NewStatus(api.ReasonUnauthorized, "invalid bearer token")
	}
	u := identity.User{Name: rec.Name, Admin: rec.Admin, Scope: rec.Scope}
	if a.ttl > 0 {
		a.mu.Lock()
		if len(a.cache) >= maxCacheEntries {
			for k, v := range a.cache {
				if !now.Before(v.expires) {
					delete(a.cache, k)
				}
			}
		}
		if len(a.cache) < maxCacheEntries {
			a.cache[h] = cached{user: u, expires: now.Add(a.ttl)}
		}
		a.mu.Unlock()
	}
	return a.checkScope(ctx, h, u)
}

// checkScope passes a scoped identity through the scope check.
func (a *Authenticator) checkScope(ctx context.Context, hash string, u identity.User) (identity.User, error) {
	a.mu.Lock()
	check := a.scopeCheck
	a.mu.Unlock()
	if u.Scope == "" || check == nil {
		return u, nil
	}
	if err := check(ctx, hash, u); err != nil {
		return identity.User{}, err
	}
	return u, nil
}

// ErrTokenFileNotPrivate is returned by EnsureAdminToken for a token file
// that users other than its owner may read, write or execute.
var ErrTokenFileNotPrivate = errors.New("auth: the admin token file is open to other users")

// EnsureAdminToken makes sure an admin token exists in the file at path and
// is registered. If the file exists its token is (re-)registered as
// AdminUser(); otherwise a new token is generated, registered, and written
// atomically to path with mode 0600 (its directory is created with mode
// 0700). It returns the token. It fails with ErrTokenFileNotPrivate
// (naming the file, its mode and the fix) when the file exists with any
// permission for group or others, and fails on an empty or unreadable
// token file, a store failure, or a failure to write the file; a token is
// never written to the file before it is registered, and never appears in
// an error.
func (a *Authenticator) EnsureAdminToken(ctx context.Context, path string) (string, error) {
	b, err := readPrivate(path)
	switch {
	case err == nil:
		token := strings.TrimSpace(string(b))
		if token == "" {
			return "", fmt.Errorf("auth: admin token file %s is empty", path)
		}
		if err := a.ensureRegistered(ctx, token, AdminUser()); err != nil {
			return "", err
		}
		return token, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", err
	}
	token, err := NewToken()
	if err != nil {
		return "", err
	}
	if err := a.Register(ctx, token, AdminUser()); err != nil {
		return "", err
	}
	if err := writeFileAtomic(path, []byte(token+"\n")); err != nil {
		return "", err
	}
	return token, nil
}

// readPrivate reads the token file at path (see privfile.Read), refusing
// it when group or others have any permission on it. A missing file is an
// os.ErrNotExist.
func readPrivate(path string) ([]byte, error) {
	b, err := privfile.Read(path)
	var np *privfile.NotPrivateError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, err
	case errors.As(err, &np):
		return nil, fmt.Errorf("%w: %s has mode %04o, so other users can read or change the token: run 'chmod 600 %s'",
			ErrTokenFileNotPrivate, path, np.Mode, path)
	case err != nil:
		return nil, fmt.Errorf("auth: read admin token: %w", err)
	}
	return b, nil
}

// ensureRegistered registers token as u unless it already is, so a restart
// does not write to etcd.
func (a *Authenticator) ensureRegistered(ctx context.Context, token string, u identity.User) error {
	kv, err := a.store.Get(ctx, key(token))
	if err == nil && string(kv.Value) == string(encode(u)) {
		return nil
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("auth: read token: %w", err)
	}
	return a.Register(ctx, token, u)
}

// writeFileAtomic writes data to path with mode 0600 through a temporary
// file renamed into place, creating the directory with mode 0700.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("auth: create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".admin-token-*")
	if err != nil {
		return fmt.Errorf("auth: write admin token: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("auth: write admin token: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("auth: write admin token: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("auth: write admin token: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("auth: write admin token: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("auth: write admin token: %w", err)
	}
	return nil
}

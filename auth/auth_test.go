package auth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/storetest"
)

func TestEnsureAdminToken_CreatesFile0600AndReusesItOnRestart(t *testing.T) {
	s, _ := storetest.Start(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "data", "admin.token")

	tok, err := auth.New(s).EnsureAdminToken(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, want 0600", st.Mode().Perm())
	}
	dst, err := os.Stat(filepath.Dir(path))
	if err != nil || dst.Mode().Perm() != 0o700 {
		t.Fatalf("token dir mode %v (%v), want 0700", dst.Mode().Perm(), err)
	}
	b, _ := os.ReadFile(path)
	if strings.TrimSpace(string(b)) != tok || len(tok) != 64 {
		t.Fatalf("file holds %q, returned %q", b, tok)
	}

	// A second start on the same data dir keeps the token.
	tok2, err := auth.New(s).EnsureAdminToken(ctx, path)
	if err != nil || tok2 != tok {
		t.Fatalf("restart: token %q, %v; want the first token", tok2, err)
	}
	u, err := auth.New(s).Authenticate(ctx, tok)
	if err != nil || !u.Admin || u.Name != "admin" {
		t.Fatalf("authenticate admin: %+v %v", u, err)
	}
	// The store holds a hash, never the token itself.
	res, err := s.List(ctx, auth.TokenPrefix, store.ListOptions{})
	if err != nil || len(res.KVs) != 1 {
		t.Fatalf("stored tokens: %+v %v", res, err)
	}
	if strings.Contains(string(res.KVs[0].Key)+string(res.KVs[0].Value), tok) {
		t.Fatal("token stored in clear")
	}
}

func TestEnsureAdminToken_RegistersATokenFileFromAnotherStore(t *testing.T) {
	s, _ := storetest.Start(t)
	path := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(path, []byte("preexisting-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := auth.New(s)
	tok, err := a.EnsureAdminToken(context.Background(), path)
	if err != nil || tok != "preexisting-token" {
		t.Fatalf("got %q %v", tok, err)
	}
	if u, err := a.Authenticate(context.Background(), tok); err != nil || !u.Admin {
		t.Fatalf("authenticate: %+v %v", u, err)
	}
}

func TestEnsureAdminToken_EmptyFileIsAnError(t *testing.T) {
	s, _ := storetest.Start(t)
	path := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(path, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.New(s).EnsureAdminToken(context.Background(), path); err == nil {
		t.Fatal("empty token file accepted")
	}
}

func TestAuthenticate_RejectsMissingAndUnknownTokens(t *testing.T) {
	s, _ := storetest.Start(t)
	a := auth.New(s)
	for _, tok := range []string{"", "nope"} {
		_, err := a.Authenticate(context.Background(), tok)
		if !errors.Is(err, api.ErrUnauthorized) {
			t.Errorf("token %q: got %v, want Unauthorized", tok, err)
		}
		if tok != "" && strings.Contains(err.Error(), tok) {
			t.Errorf("error %q names the token", err)
		}
	}
}

func TestTokenOp_RegistersInATransactionAndRevokeOpRemoves(t *testing.T) {
	s, _ := storetest.Start(t)
	ctx := context.Background()
	a := auth.New(s)
	a.SetCacheTTL(0) // every check reads etcd, so another writer's revoke shows at once
	tok, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	worker := identity.User{Name: "event:default/e1", Scope: "default/e1"}
	if _, err := s.Txn(ctx, nil, auth.TokenOp(tok, worker), store.Put("/other", []byte("x"))); err != nil {
		t.Fatal(err)
	}
	u, err := a.Authenticate(ctx, tok)
	if err != nil || u != worker {
		t.Fatalf("authenticate: %+v %v, want %+v", u, err, worker)
	}
	if _, err := s.Txn(ctx, nil, auth.RevokeOp(tok)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, tok); !errors.Is(err, api.ErrUnauthorized) {
		t.Fatalf("after revoke: %v, want Unauthorized", err)
	}
}

func TestAuthenticate_CachedTokenNeedsNoStoreRead(t *testing.T) {
	s, _ := storetest.Start(t)
	a := auth.New(s)
	tok, _ := auth.NewToken()
	if err := a.Register(context.Background(), tok, identity.User{Name: "u"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	// A canceled context makes any etcd read fail: the hot path must not read.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if u, err := a.Authenticate(ctx, tok); err != nil || u.Name != "u" {
		t.Fatalf("cached authenticate: %+v %v", u, err)
	}
	// Revoke through the Authenticator drops the cache entry at once.
	if err := a.Revoke(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(context.Background(), tok); !errors.Is(err, api.ErrUnauthorized) {
		t.Fatalf("after revoke: %v", err)
	}
}

// TestAuthenticate_CachedTokenNeedsNoStoreAndAnUncachedOneIsUnavailable:
// with the store gone, a token seen within the cache TTL still
// authenticates, and one never seen fails with ServiceUnavailable and a
// Retry-After, not an internal error.
func TestAuthenticate_CachedTokenNeedsNoStoreAndAnUncachedOneIsUnavailable(t *testing.T) {
	s, _ := storetest.Start(t)
	a := auth.New(s)
	ctx := store.WithTimeout(context.Background(), time.Second)
	seen, other := "seen-token", "other-token"
	for _, tok := range []string{seen, other} {
		if err := a.Register(ctx, tok, identity.User{Name: tok}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Authenticate(ctx, seen); err != nil {
		t.Fatal(err)
	}
	if err := s.Client().Close(); err != nil {
		t.Fatal(err)
	}
	if u, err := a.Authenticate(ctx, seen); err != nil || u.Name != seen {
		t.Fatalf("cached token without the store: %v %v", u, err)
	}
	_, err := a.Authenticate(ctx, other)
	var st *api.Status
	if !errors.As(err, &st) || st.Reason != api.ReasonUnavailable || st.Details == nil || st.Details.RetryAfterSeconds <= 0 {
		t.Fatalf("uncached token without the store: %v, want ServiceUnavailable with RetryAfterSeconds", err)
	}
}

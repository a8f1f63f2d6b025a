package auth_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cairn.dev/cairn/auth"
	"cairn.dev/cairn/store/storetest"
)

func TestEnsureAdminToken_FileOpenToOtherUsersIsRefusedWithTheFix(t *testing.T) {
	s, _ := storetest.Start(t)
	const token = "secret-admin-token-value"
	for _, mode := range []os.FileMode{0o644, 0o640, 0o620, 0o604, 0o602, 0o610} {
		t.Run(fmt.Sprintf("%04o", mode), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "admin.token")
			if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			got, err := auth.New(s).EnsureAdminToken(context.Background(), path)
			if !errors.Is(err, auth.ErrTokenFileNotPrivate) || got != "" {
				t.Fatalf("got %q, %v; want ErrTokenFileNotPrivate", got, err)
			}
			msg := err.Error()
			for _, want := range []string{path, fmt.Sprintf("%04o", mode), "chmod 600 " + path} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if strings.Contains(msg, token) {
				t.Errorf("error %q shows the token", msg)
			}
			if _, err := auth.New(s).Authenticate(context.Background(), token); err == nil {
				t.Error("the refused token was registered")
			}
		})
	}
}

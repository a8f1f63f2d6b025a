package daemon_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
)

// backupOf reads a backup of d through GET /backup.
func backupOf(t *testing.T, d *daemon.Daemon) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(testkit.Context(t), http.MethodGet, d.URL()+api.BackupPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.Token())
	resp, err := testkit.HTTPClient(t, d.ClientConfig()).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /backup: %d %v: %.200s", resp.StatusCode, err, b)
	}
	return b
}

// A backup that is not one, one from a newer cairn, one cut short or
// altered, a data dir that is not empty, a key open to others: each is a
// clear error, and nothing is written or overwritten.
func TestRestore_BadInputIsRefusedAndNothingIsWritten(t *testing.T) {
	src := dataDir(t)
	d := start(t, daemon.Options{DataDir: src})
	good := backupOf(t, d)
	key := filepath.Join(src, "encryption.key")
	_, snap, _ := bytes.Cut(good, []byte("\n"))
	_, snap, _ = bytes.Cut(snap, []byte("\n"))
	newer := append([]byte(api.BackupMagic+"\n"+`{"format":99,"cairn":"v9.0.0","revision":1}`+"\n"), snap...)
	altered := bytes.Clone(good)
	altered[len(altered)/2] ^= 0xff
	loose := filepath.Join(t.TempDir(), "loose.key")
	if err := os.WriteFile(loose, []byte("k"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		backup   []byte
		key      string
		nonEmpty bool
		want     error
		says     string
	}{
		{name: "not a backup", backup: []byte("SQLite format 3\x00 and more"), want: api.ErrNotABackup, says: "cairn backup"},
		{name: "empty file", backup: nil, want: api.ErrNotABackup, says: api.BackupMagic},
		{name: "from a newer cairn", backup: newer, want: api.ErrBackupTooNew, says: "format 99, cairn v9.0.0"},
		{name: "cut short", backup: good[:len(good)-100], want: daemon.ErrBackupCorrupt, says: "truncated"},
		{name: "altered", backup: altered, want: daemon.ErrBackupCorrupt, says: "checksum"},
		{name: "non-empty data dir", backup: good, nonEmpty: true, want: daemon.ErrRestoreTarget, says: "nothing was changed"},
		{name: "key open to others", backup: good, key: loose, says: "chmod 600"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			file := filepath.Join(parent, "in.backup")
			if err := os.WriteFile(file, tc.backup, 0o600); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(parent, "data")
			if tc.nonEmpty {
				if err := os.MkdirAll(target, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(target, "keep"), []byte("mine"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			k := key
			if tc.key != "" {
				k = tc.key
			}
			_, err := daemon.Restore(daemon.RestoreOptions{From: file, DataDir: target, EncryptionKeyFile: k})
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("restore: %v, want %v saying %q", err, tc.want, tc.says)
			}
			entries, _ := os.ReadDir(parent)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			want := "[in.backup]"
			if tc.nonEmpty {
				want = "[data in.backup]"
				if b, err := os.ReadFile(filepath.Join(target, "keep")); err != nil || string(b) != "mine" {
					t.Fatalf("the data dir's file was touched: %q %v", b, err)
				}
				if e, _ := os.ReadDir(target); len(e) != 1 {
					t.Fatalf("the data dir holds %d entries, want its one file", len(e))
				}
			}
			if got := fmt.Sprint(names); got != want {
				t.Fatalf("after a refused restore the dir holds %s, want %s", got, want)
			}
		})
	}
}

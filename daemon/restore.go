package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/storage/backend"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"go.uber.org/zap"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/privfile"
)

// Restore: a backup (api.BackupPath) holds etcd's snapshot, a copy of its
// database. Restoring puts that database where the embedded etcd of a new
// data dir looks for it (<data dir>/etcd/member/snap/db), with the
// membership of the old cluster removed and its applied index reset to 0,
// and no write-ahead log: the embedded etcd then starts a new one-member
// cluster over the data, whose revisions are the backup's (so every
// resourceVersion is kept), applying its own log from the start.

// Restore errors.
var (
	// ErrRestoreTarget: the data dir to restore into exists and is not
	// empty.
	ErrRestoreTarget = errors.New("daemon: restore: the data dir is not empty")
	// ErrBackupCorrupt: the snapshot's checksum does not match (a
	// truncated or damaged file), or it holds no etcd database.
	ErrBackupCorrupt = errors.New("daemon: restore: the backup is damaged")
)

// RestoreOptions configures Restore.
type RestoreOptions struct {
	// From is the backup file. Required.
	From string
	// DataDir is the data dir to create; it must not exist, or be empty.
	DataDir string
	// EncryptionKeyFile is the secret-encryption key of the server the
	// backup was taken from (its <data dir>/encryption.key): the Secrets
	// in the backup are encrypted with it. Copied into the new data dir.
	EncryptionKeyFile string
}

// Restored says what Restore restored.
type Restored struct {
	Header api.BackupHeader
	// Revision is the store's revision in the backup, Keys its number of
	// keys.
	Revision int64
	Keys     int
}

// Restore creates opts.DataDir from a backup, offline, for a server with
// the embedded etcd. It works in a temporary dir beside DataDir and
// renames it into place at the end, so a failure leaves nothing behind
// and nothing is ever overwritten. It blocks while it copies the backup.
// Errors: ErrRestoreTarget, api.ErrNotABackup, api.ErrBackupTooNew,
// ErrBackupCorrupt, a key file that is missing or open to other users,
// or the file system's errors.
func Restore(opts RestoreOptions) (Restored, error) {
	var res Restored
	switch {
	case opts.From == "":
		return res, errors.New("daemon: restore: name the backup file (--from)")
	case opts.DataDir == "":
		return res, errors.New("daemon: restore: name the data dir to create (--data-dir)")
	case opts.EncryptionKeyFile == "":
		return res, errors.New("daemon: restore: name the encryption key of the server the backup was taken from " +
			"(--encryption-key-file, its <data dir>/encryption.key): the backup's Secrets are encrypted with it")
	}
	if err := checkRestoreTarget(opts.DataDir); err != nil {
		return res, err
	}
	key, err := readKeyFile(opts.EncryptionKeyFile)
	if err != nil {
		return res, err
	}
	f, err := os.Open(opts.From)
	if err != nil {
		return res, fmt.Errorf("daemon: restore: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if res.Header, err = api.ReadBackupHeader(br); err != nil {
		return res, fmt.Errorf("daemon: restore %s: %w", opts.From, err)
	}
	parent := filepath.Dir(filepath.Clean(opts.DataDir))
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return res, fmt.Errorf("daemon: restore: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(opts.DataDir)+".restore-")
	if err != nil {
		return res, fmt.Errorf("daemon: restore: %w", err)
	}
	defer os.RemoveAll(tmp) // gone once renamed
	db := filepath.Join(tmp, "etcd", "member", "snap", "db")
	if err := writeSnapshot(br, db); err != nil {
		return res, err
	}
	if res.Revision, res.Keys, err = resetMembership(db); err != nil {
		return res, err
	}
	if res.Revision < res.Header.Revision {
		// An external etcd member that lagged behind: the snapshot misses
		// writes acknowledged before the backup was asked for.
		return res, fmt.Errorf("%w: its snapshot is of revision %d, older than the revision %d the server had acknowledged when it was asked for; take the backup again",
			ErrBackupCorrupt, res.Revision, res.Header.Revision)
	}
	if err := os.WriteFile(filepath.Join(tmp, "encryption.key"), key, 0o600); err != nil {
		return res, fmt.Errorf("daemon: restore: write the encryption key: %w", err)
	}
	if err := checkRestoreTarget(opts.DataDir); err != nil {
		return res, err
	}
	_ = os.Remove(opts.DataDir) // an empty dir; nothing when missing
	if err := os.Rename(tmp, opts.DataDir); err != nil {
		return res, fmt.Errorf("daemon: restore: move the restored data into %s: %w", opts.DataDir, err)
	}
	return res, nil
}

// checkRestoreTarget refuses a data dir that exists and is not empty.
func checkRestoreTarget(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("daemon: restore: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("%w: %s holds %d entries; restore into a new directory (nothing was changed)", ErrRestoreTarget, dir, len(entries))
	}
	return nil
}

// readKeyFile reads the encryption key file, which must be private.
func readKeyFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("daemon: restore: the encryption key: %w", err)
	}
	if !privfile.Private(st.Mode()) {
		return nil, fmt.Errorf("daemon: restore: the encryption key %s has mode %04o: run 'chmod 600 %s' first", path, st.Mode().Perm(), path)
	}
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("daemon: restore: the encryption key: %w", err)
	}
	return key, nil
}

// writeSnapshot copies etcd's snapshot from r to path (mode 0600, its
// directories 0700), checking its trailing SHA-256, which it strips.
func writeSnapshot(r io.Reader, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("daemon: restore: %w", err)
	}
	out, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("daemon: restore: %w", err)
	}
	defer out.Close()
	if _, err := api.CopySnapshot(out, r, true); errors.Is(err, api.ErrBackupChecksum) {
		return fmt.Errorf("%w: %w; nothing was restored", ErrBackupCorrupt, err)
	} else if err != nil {
		return fmt.Errorf("daemon: restore: %w", err)
	}
	return out.Sync()
}

// resetMembership makes the database at path the start of a new cluster:
// it checks that it is an etcd database, removes the old members and
// resets the applied index, and returns its revision and number of keys.
func resetMembership(path string) (rev int64, keys int, err error) {
	if rev, keys, err = inspect(path); err != nil {
		return 0, 0, err
	}
	lg := zap.NewNop()
	be := backend.NewDefaultBackend(lg, path)
	defer be.Close()
	if err := schema.NewMembershipBackend(lg, be).TrimMembershipFromBackend(); err != nil {
		return 0, 0, fmt.Errorf("daemon: restore: reset the membership: %w", err)
	}
	// The applied index of the old cluster goes: the new one applies its
	// log from index 1 (etcd skips entries at or below the index it reads).
	tx := be.BatchTx()
	tx.LockOutsideApply()
	tx.UnsafeDelete(schema.Meta, schema.MetaConsistentIndexKeyName)
	tx.UnsafeDelete(schema.Meta, schema.MetaTermKeyName)
	tx.Unlock()
	be.ForceCommit()
	return rev, keys, nil
}

// inspect checks that path is an etcd database and returns its latest
// revision and its number of keys (every revision of every key).
func inspect(path string) (rev int64, keys int, err error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return 0, 0, fmt.Errorf("%w: it holds no etcd database: %v", ErrBackupCorrupt, err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("key"))
		if b == nil || tx.Bucket([]byte("meta")) == nil {
			return fmt.Errorf("%w: it holds no etcd key space", ErrBackupCorrupt)
		}
		keys = b.Stats().KeyN
		if k, _ := b.Cursor().Last(); len(k) >= 8 {
			for _, c := range k[:8] {
				rev = rev<<8 | int64(c)
			}
		}
		return nil
	})
	return rev, keys, err
}

// Package privfile reads and writes the files that hold cairn's secrets
// (tokens, keys, configs), refusing a file that other users can reach: the
// one place that decides what "private" means and checks it on the file
// actually read.
package privfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// NotPrivateError reports a file or directory on which group or others
// have some permission.
type NotPrivateError struct {
	Path string
	Mode fs.FileMode // its permission bits
}

func (e *NotPrivateError) Error() string {
	return fmt.Sprintf("%s has mode %04o: other users can reach it", e.Path, e.Mode)
}

// Private reports whether only the owner has permissions in mode.
func Private(mode fs.FileMode) bool { return mode.Perm()&0o077 == 0 }

// Read reads the file at path. The mode is checked on the open file, so
// the file read is the file checked. A missing file is an error that
// errors.Is(os.ErrNotExist); a file others can reach is a
// *NotPrivateError, and nothing of it is read.
func Read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !Private(st.Mode()) {
		return nil, &NotPrivateError{Path: path, Mode: st.Mode().Perm()}
	}
	return io.ReadAll(f)
}

// Write replaces the file at path with data, atomically, with mode 0600
// (it may hold a credential): a temporary file in the same directory is
// written, then renamed. The directory must exist. Errors: any failure to
// create, write or rename the file.
func Write(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

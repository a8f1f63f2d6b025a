// Package privfile reads the files that hold cairn's secrets (tokens,
// keys), refusing a file that other users can reach: the one place that
// decides what "private" means and checks it on the file actually read.
package privfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
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

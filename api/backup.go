package api

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// BackupPath is where an admin reads a backup of the store: GET streams
// a cairn backup (BackupMagic, a BackupHeader line, then etcd's snapshot,
// which ends with the SHA-256 of what precedes it).
const BackupPath = "/backup"

// BackupMagic opens every backup file, followed by a newline.
const BackupMagic = "CAIRN-BACKUP"

// BackupFormat is the format of the backups this cairn writes, and the
// newest it reads.
const BackupFormat = 1

// BackupHeader is the JSON line after BackupMagic: what wrote the backup.
type BackupHeader struct {
	// Format is the backup's format (BackupFormat when written).
	Format int `json:"format"`
	// Cairn is the version of the cairn that wrote it.
	Cairn string `json:"cairn"`
	// Created is when the snapshot was taken (RFC 3339).
	Created string `json:"created"`
	// Revision is the store's revision just before the snapshot was
	// taken: every write acknowledged by then is in it.
	Revision int64 `json:"revision"`
}

// WriteBackupHeader writes BackupMagic and h as the first two lines of a
// backup. It returns w's error.
func WriteBackupHeader(w io.Writer, h BackupHeader) error {
	b, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("backup: encode the header: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n%s\n", BackupMagic, b)
	return err
}

// ErrNotABackup is returned by ReadBackupHeader for a file that is no
// cairn backup, and ErrBackupTooNew for one written in a newer format.
var (
	ErrNotABackup   = errors.New("not a cairn backup")
	ErrBackupTooNew = errors.New("the backup was written by a newer cairn")
)

// maxBackupHeader bounds the header line.
const maxBackupHeader = 4096

// ReadBackupHeader reads the first two lines of a backup from r and
// returns its header; r is then at the start of etcd's snapshot. Errors:
// ErrNotABackup (no magic line, or a header that is not one),
// ErrBackupTooNew (a format newer than BackupFormat), or r's error.
func ReadBackupHeader(r *bufio.Reader) (BackupHeader, error) {
	var h BackupHeader
	magic, err := readLine(r, len(BackupMagic)+1)
	if err != nil || magic != BackupMagic {
		return h, fmt.Errorf("%w: it does not start with %q (a file written by `cairn backup` does)", ErrNotABackup, BackupMagic)
	}
	line, err := readLine(r, maxBackupHeader)
	if err != nil {
		return h, fmt.Errorf("%w: its header line is missing or longer than %d bytes", ErrNotABackup, maxBackupHeader)
	}
	dec := json.NewDecoder(strings.NewReader(line))
	if err := dec.Decode(&h); err != nil || h.Format <= 0 {
		return h, fmt.Errorf("%w: its header is not a backup header", ErrNotABackup)
	}
	if h.Format > BackupFormat {
		return h, fmt.Errorf("%w (format %d, cairn %s): this cairn reads backups of format %d and older; restore with that cairn or a newer one",
			ErrBackupTooNew, h.Format, h.Cairn, BackupFormat)
	}
	return h, nil
}

// readLine reads a line of at most limit bytes, without its newline.
func readLine(r *bufio.Reader, limit int) (string, error) {
	var b []byte
	for len(b) <= limit {
		c, err := r.ReadByte()
		if err != nil {
			return "", err
		}
		if c == '\n' {
			return string(b), nil
		}
		b = append(b, c)
	}
	return "", errors.New("line too long")
}

// ErrBackupChecksum is returned by CopySnapshot when the snapshot's
// trailing checksum does not match what precedes it: the backup was cut
// short or altered.
var ErrBackupChecksum = errors.New("the backup's checksum does not match its content (truncated or altered)")

// CopySnapshot copies etcd's snapshot from src to dst, checking the
// SHA-256 that ends it (etcd appends it to the database). With strip, the
// checksum is not copied (what remains is the database itself). It
// returns the bytes of the database, or ErrBackupChecksum, or src's or
// dst's error. It blocks until src ends.
func CopySnapshot(dst io.Writer, src io.Reader, strip bool) (int64, error) {
	h := sha256.New()
	tail := make([]byte, 0, 2*sha256.Size) // the last bytes read: the checksum, once src ends
	buf := make([]byte, 256<<10)
	var n int64
	for {
		k, rerr := src.Read(buf)
		chunk := append(tail, buf[:k]...)
		if keep := len(chunk) - sha256.Size; keep > 0 {
			if _, err := dst.Write(chunk[:keep]); err != nil {
				return n, err
			}
			h.Write(chunk[:keep])
			n += int64(keep)
			chunk = chunk[keep:]
		}
		tail = append(tail[:0], chunk...)
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return n, rerr
		}
	}
	if len(tail) != sha256.Size || n == 0 || !bytes.Equal(h.Sum(nil), tail) {
		return n, ErrBackupChecksum
	}
	if !strip {
		if _, err := dst.Write(tail); err != nil {
			return n, err
		}
	}
	return n, nil
}

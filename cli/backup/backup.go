// Package backup is `cairn backup -o FILE`: it streams a consistent
// snapshot of the server's store (GET /backup, admins only) into FILE,
// checks it whole (etcd's checksum ends it), and only then gives it its
// name. `cairn restore` (package restore) makes a data dir of it.
package backup

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/session"
)

// flagpole holds the flags of `cairn backup`.
type flagpole struct {
	Output string
}

// New returns the `backup` command.
func New(s *session.Session) *cobra.Command {
	flags := &flagpole{}
	cmd := &cobra.Command{
		Use:   "backup -o FILE",
		Short: "Write a consistent backup of the server's store to a file (admin only)",
		Long: "Backup streams a snapshot of the store (etcd's, embedded or external) through the API into\n" +
			"FILE (mode 0600): every write acknowledged before the command started is in it. The file is\n" +
			"checked whole before it gets its name. Restore it with 'cairn restore'. The Secrets in it stay\n" +
			"encrypted with the server's encryption key, which the backup does not hold: keep that key too.",
		Example: "  cairn backup -o cairn-$(date +%F).backup",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), s, flags)
		},
	}
	cmd.Flags().StringVarP(&flags.Output, "output", "o", "", "the file to write (it must not exist)")
	return cmd
}

func run(ctx context.Context, s *session.Session, flags *flagpole) error {
	if flags.Output == "" {
		return errors.New("name the file to write with -o FILE")
	}
	if _, err := os.Lstat(flags.Output); err == nil {
		return fmt.Errorf("-o %s: the file exists; choose another name or remove it first", flags.Output)
	}
	body, err := open(ctx, s)
	if err != nil {
		return err
	}
	defer body.Close()
	h, n, err := Save(body, flags.Output)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(s.Streams.Out, "backup of revision %d written to %s (%d bytes of store)\n", h.Revision, flags.Output, n)
	return err
}

// open asks the server for a backup and returns the body of its answer.
// Errors: the server's refusal (Forbidden for a token that is no admin's)
// or no answer.
func open(ctx context.Context, s *session.Session) (io.ReadCloser, error) {
	cfg, err := s.Config()
	if err != nil {
		return nil, err
	}
	tlsCfg, err := cfg.TLSConfig()
	if err != nil {
		return nil, err
	}
	base := cfg.Server
	if !strings.Contains(base, "://") {
		base = "https://" + base
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+api.BackupPath, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot use the cairn server address %q: %w", cfg.Server, err)
	}
	if cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.Token)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the cairn server at %s: %w", cfg.Server, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp.Body, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var st api.Status
	if json.Unmarshal(raw, &st) == nil && st.Message != "" {
		return nil, &st
	}
	return nil, fmt.Errorf("the server answered %s to the backup request", resp.Status)
}

// Save writes the backup read from r into path: into a temporary file
// beside it (mode 0600), checked (header and checksum) and synced, then
// renamed. It returns the backup's header and the size of the store in
// it. Nothing is left at path on error. It blocks until r ends.
func Save(r io.Reader, path string) (api.BackupHeader, int64, error) {
	br := bufio.NewReader(r)
	h, err := api.ReadBackupHeader(br)
	if err != nil {
		return h, 0, fmt.Errorf("the server's answer: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".partial-")
	if err != nil {
		return h, 0, err
	}
	defer os.Remove(tmp.Name()) // nothing once renamed
	defer tmp.Close()
	if err := tmp.Chmod(0o600); err != nil {
		return h, 0, err
	}
	if err := api.WriteBackupHeader(tmp, h); err != nil {
		return h, 0, err
	}
	n, err := api.CopySnapshot(tmp, br, false)
	if err != nil {
		return h, n, fmt.Errorf("the backup did not arrive whole (%w); nothing was written to %s", err, path)
	}
	if err := tmp.Sync(); err != nil {
		return h, n, err
	}
	if err := tmp.Close(); err != nil {
		return h, n, err
	}
	if err := os.Link(tmp.Name(), path); err != nil { // never replaces a file that appeared meanwhile
		return h, n, fmt.Errorf("-o %s: %w", path, err)
	}
	return h, n, nil
}

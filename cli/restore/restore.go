// Package restore is `cairn restore --from FILE --data-dir DIR`: offline,
// it makes a new data dir for a `cairn server` with the embedded etcd
// from a file written by `cairn backup` (daemon.Restore).
package restore

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"cairn.dev/cairn/daemon"
)

// flagpole holds the flags of `cairn restore`.
type flagpole struct {
	From              string
	DataDir           string
	EncryptionKeyFile string
}

// New returns the `restore` command.
func New() *cobra.Command {
	flags := &flagpole{}
	cmd := &cobra.Command{
		Use:   "restore --from FILE --data-dir DIR --encryption-key-file KEY",
		Short: "Make a new data dir from a backup, offline",
		Long: "Restore creates DIR (it must not exist, or be empty) from a file written by 'cairn backup',\n" +
			"for a 'cairn server --data-dir DIR' with the embedded etcd. Every object of the backup comes\n" +
			"back with its resourceVersion, and every token registered then works again. KEY is the\n" +
			"encryption key of the server the backup was taken from (its <data-dir>/encryption.key): the\n" +
			"Secrets in the backup are encrypted with it, and it is copied into DIR. Nothing is written\n" +
			"to DIR unless the whole restore succeeds. Run it while no server uses DIR.",
		Example: "  cairn restore --from cairn.backup --data-dir ~/.cairn/restored --encryption-key-file ~/.cairn/data/encryption.key\n" +
			"  cairn server --data-dir ~/.cairn/restored",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.OutOrStdout(), flags)
		},
	}
	f := cmd.Flags()
	f.StringVar(&flags.From, "from", "", "the backup file (written by 'cairn backup')")
	f.StringVar(&flags.DataDir, "data-dir", "", "the data dir to create (it must not exist, or be empty)")
	f.StringVar(&flags.EncryptionKeyFile, "encryption-key-file", "", "the encryption key of the server the backup was taken from")
	return cmd
}

func run(out io.Writer, flags *flagpole) error {
	switch {
	case flags.From == "":
		return errors.New("name the backup to restore with --from FILE")
	case flags.DataDir == "":
		return errors.New("name the data dir to create with --data-dir DIR")
	case flags.EncryptionKeyFile == "":
		return errors.New("name the encryption key of the server the backup was taken from with --encryption-key-file " +
			"(its <data-dir>/encryption.key): the backup's Secrets are encrypted with it")
	}
	res, err := daemon.Restore(daemon.RestoreOptions{From: flags.From, DataDir: flags.DataDir, EncryptionKeyFile: flags.EncryptionKeyFile})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "restored revision %d (%d keys, backup of %s by cairn %s) into %s; start it with: cairn server --data-dir %s\n",
		res.Revision, res.Keys, res.Header.Created, res.Header.Cairn, flags.DataDir, flags.DataDir)
	return err
}

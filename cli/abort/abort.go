// Package abort is `cairn abort installation NAME`: it sets the abort
// operation annotation on an installation.
package abort

import (
	"github.com/spf13/cobra"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/reconcile"
	"cairn.dev/cairn/cli/session"
)

// New returns the `abort` command.
func New(s *session.Session) *cobra.Command {
	return &cobra.Command{
		Use:   "abort installation NAME",
		Short: "Abort an installation",
		Long: "Abort sets the operation annotation cairn.dev/operation: abort on an installation. Once its\n" +
			"nested installations and execution are finished, the installation becomes Aborted and is\n" +
			"not updated further until it changes or is reconciled again.",
		Example: "  cairn abort installation shop -n shop",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return reconcile.Run(cmd.Context(), s, args[0], args[1], api.OperationAbort)
		},
	}
}

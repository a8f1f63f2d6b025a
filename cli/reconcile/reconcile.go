// Package reconcile is `cairn reconcile installation NAME [--force]`: it
// asks the installation controller to reconcile an installation again by
// setting the operation annotation (reconcile, or force-reconcile with
// --force), so nobody has to type it.
package reconcile

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/session"
	"cairn.dev/cairn/client"
)

type flagpole struct {
	Force bool
}

// New returns the `reconcile` command.
func New(s *session.Session) *cobra.Command {
	flags := &flagpole{}
	cmd := &cobra.Command{
		Use:   "reconcile installation NAME",
		Short: "Ask the controller to reconcile an installation again",
		Long: "Reconcile sets the operation annotation cairn.dev/operation on an installation: \"reconcile\"\n" +
			"runs the standard flow again (a failed installation runs its deploy items again), and with\n" +
			"--force \"force-reconcile\" updates its nested installations and execution even while the\n" +
			"installations it depends on are not ready. The controller removes the annotation when done.",
		Example: "  cairn reconcile installation shop -n shop\n  cairn reconcile installation shop-app --force",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			op := api.OperationReconcile
			if flags.Force {
				op = api.OperationForceReconcile
			}
			return Run(cmd.Context(), s, args[0], args[1], op)
		},
	}
	cmd.Flags().BoolVar(&flags.Force, "force", false, "force-reconcile: do not wait for the installations this one depends on")
	return cmd
}

// Run sets the operation annotation op on the installation the user named
// (kindName must name the Installation kind) and prints what it did.
// Errors: an unknown kind or another kind than Installation; NotFound.
func Run(ctx context.Context, s *session.Session, kindName, name, op string) error {
	kind, c, err := s.KindClient(ctx, kindName)
	if err != nil {
		return err
	}
	if kind.Kind != api.KindInstallation {
		return fmt.Errorf("only installations take operations, not %s", kind.Kind)
	}
	ns := s.NamespaceFor(kind, "")
	if err := SetOperation(ctx, c, ns, name, op); err != nil {
		return err
	}
	_, err = fmt.Fprintf(s.Streams.Out, "installation/%s: %s requested\n", name, op)
	return err
}

// SetOperation sets cairn.dev/operation to op on an installation with a
// merge patch. Errors: NotFound; what Patch returns.
func SetOperation(ctx context.Context, c client.Interface, ns, name, op string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{api.AnnotationOperation: op}}})
	_, err := c.Patch(ctx, api.KindInstallation, ns, name, patch, false)
	return err
}

// Package logs is `cairn logs event/NAME [--job J] [-f]`: the output of an
// event's worker, or of one of its jobs, kept until the event is deleted.
package logs

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/session"
	"cairn.dev/cairn/client"
)

// flagpole holds the flags of `cairn logs`.
type flagpole struct {
	Job    string
	Follow bool
}

// New returns the `logs` command.
func New(s *session.Session) *cobra.Command {
	f := &flagpole{}
	cmd := &cobra.Command{
		Use:   "logs event/NAME [--job JOB] [-f]",
		Short: "Print the output of an event's worker or job",
		Long: "Logs prints what an event's worker (or, with --job, one of its jobs) wrote to stdout and\n" +
			"stderr. With -f it keeps printing until the worker or job ends. Logs stay until the event is deleted.",
		Example: "  cairn logs event/hello-x7k2p\n  cairn logs event/hello-x7k2p --job build -f",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, ok := strings.Cut(args[0], "/")
			if !ok || name == "" {
				kind, name = "event", args[0]
			}
			if k := strings.ToLower(kind); k != "event" && k != "events" && k != "ev" {
				return fmt.Errorf("logs are kept for events: name one as event/NAME, not %q", args[0])
			}
			c, err := s.Client()
			if err != nil {
				return err
			}
			q := url.Values{}
			if f.Job != "" {
				q.Set("job", f.Job)
			}
			if f.Follow {
				q.Set("follow", "true")
			}
			rc, err := c.ActionStream(cmd.Context(), client.ActionRequest{Method: "GET", Kind: api.KindEvent,
				Namespace: s.Namespace, Name: name, Action: "logs", Query: q})
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.Copy(s.Streams.Out, rc)
			return err
		},
	}
	cmd.Flags().StringVar(&f.Job, "job", "", "the job whose output to print (default: the worker's)")
	cmd.Flags().BoolVarP(&f.Follow, "follow", "f", false, "keep printing new output until it ends")
	return cmd
}

// Package logs is `cairn logs event/NAME [--job J] [-f]` and `cairn logs
// deployitem/NAME [--delete] [-f]`: the output of an event's worker or
// job, or of a container deploy item's command or delete command, kept
// until the event or item is deleted. Any API server answers, whichever
// process runs the controllers.
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
	Delete bool
	Follow bool
}

// New returns the `logs` command.
func New(s *session.Session) *cobra.Command {
	f := &flagpole{}
	cmd := &cobra.Command{
		Use:   "logs (event/NAME [--job JOB] | deployitem/NAME [--delete]) [-f]",
		Short: "Print the output of an event's worker or job, or of a container deploy item",
		Long: "Logs prints what an event's worker (or, with --job, one of its jobs) wrote to stdout and\n" +
			"stderr, or what a container deploy item's command (with --delete, its delete command) wrote.\n" +
			"With -f it keeps printing until it ends. Logs stay until the event or deploy item is deleted;\n" +
			"the end of each one's output (--log-tail-bytes of the server) is kept through the API, so it\n" +
			"survives the host that ran it.",
		Example: "  cairn logs event/hello-x7k2p\n  cairn logs event/hello-x7k2p --job build -f\n" +
			"  cairn logs deployitem/preview-42-app\n  cairn logs di/preview-42-app --delete",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, q, err := request(args[0], f)
			if err != nil {
				return err
			}
			c, err := s.Client()
			if err != nil {
				return err
			}
			_, name, _ := strings.Cut(args[0], "/")
			if name == "" {
				name = args[0]
			}
			rc, err := c.ActionStream(cmd.Context(), client.ActionRequest{Method: "GET", Kind: kind,
				Namespace: s.Namespace, Name: name, Action: api.ActionLogs, Query: q})
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.Copy(s.Streams.Out, rc)
			return err
		},
	}
	cmd.Flags().StringVar(&f.Job, "job", "", "the job whose output to print (events; default: the worker's)")
	cmd.Flags().BoolVar(&f.Delete, "delete", false, "print the output of the deploy item's delete command (deploy items)")
	cmd.Flags().BoolVarP(&f.Follow, "follow", "f", false, "keep printing new output until it ends")
	return cmd
}

// request maps the argument KIND/NAME (a bare NAME is an event's) and the
// flags to the kind whose logs are asked and the query. Errors: a kind
// that keeps no logs, a flag of the other kind.
func request(arg string, f *flagpole) (string, url.Values, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		kind, name = "event", arg
	}
	if name == "" {
		return "", nil, fmt.Errorf("name the object as KIND/NAME (event/NAME or deployitem/NAME), not %q", arg)
	}
	q := url.Values{}
	if f.Follow {
		q.Set("follow", "true")
	}
	switch strings.ToLower(kind) {
	case "event", "events", "ev":
		if f.Delete {
			return "", nil, fmt.Errorf("--delete is for deploy items (deployitem/NAME): an event has no delete command")
		}
		if f.Job != "" {
			q.Set("job", f.Job)
		}
		return api.KindEvent, q, nil
	case "deployitem", "deployitems", "di":
		if f.Job != "" {
			return "", nil, fmt.Errorf("--job is for events (event/NAME): a deploy item has no jobs; --delete shows its delete command's output")
		}
		if f.Delete {
			q.Set("delete", "true")
		}
		return api.KindDeployItem, q, nil
	}
	return "", nil, fmt.Errorf("logs are kept for events and deploy items: name one as event/NAME or deployitem/NAME, not %q", arg)
}

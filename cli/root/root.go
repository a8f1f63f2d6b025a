// Package root builds the `cairn` command: the global flags and every
// subcommand. Only main calls os.Exit; commands return errors, which the
// root prints (as "Error: ...") to the error stream.
package root

import (
	"os"

	"github.com/spf13/cobra"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/abort"
	"cairn.dev/cairn/cli/apply"
	"cairn.dev/cairn/cli/backup"
	deletecmd "cairn.dev/cairn/cli/delete"
	"cairn.dev/cairn/cli/describe"
	"cairn.dev/cairn/cli/event"
	"cairn.dev/cairn/cli/explain"
	"cairn.dev/cairn/cli/get"
	"cairn.dev/cairn/cli/logs"
	"cairn.dev/cairn/cli/patch"
	"cairn.dev/cairn/cli/reconcile"
	"cairn.dev/cairn/cli/session"
	"cairn.dev/cairn/cli/wait"
	"cairn.dev/cairn/client"
)

// IOStreams are the standard streams the commands use.
type IOStreams = session.IOStreams

// New returns the `cairn` command writing to streams, with the client
// commands (apply, get, describe, delete, wait) and the extra commands
// given (`server`, ...). Client commands resolve the server and token from
// --server/--token, then CAIRN_SERVER/CAIRN_TOKEN, then the config file
// (--config, default ~/.cairn/config). Errors of the client commands are
// reworded for people (see session.Explain); Execute returns them after
// printing them to streams.ErrOut.
func New(streams IOStreams, extra ...*cobra.Command) *cobra.Command {
	s := session.New(streams)
	cmd := &cobra.Command{
		Use:   "cairn",
		Short: "cairn is a declarative control plane",
		Long: "cairn is a declarative control plane: declare resources, and controllers reconcile them\n" +
			"until the world matches. Start a server with 'cairn server', then use the other commands.",
		SilenceUsage: true,
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	pf := cmd.PersistentFlags()
	pf.StringVar(&s.Server, "server", "", "the cairn server URL (default $"+client.EnvServer+", the config file, or "+client.DefaultServer+")")
	pf.StringVar(&s.Token, "token", "", "the bearer token (default $"+client.EnvToken+" or the config file)")
	pf.StringVar(&s.CAFile, "certificate-authority", "", "a PEM file of the CA the server's certificate is issued by (default $"+client.EnvCAFile+", the config file, or the system's roots)")
	pf.StringVar(&s.ConfigPath, "config", client.DefaultConfigPath(), "the client config file written by 'cairn server'")
	ns := api.DefaultNamespace
	if v := os.Getenv("CAIRN_NAMESPACE"); v != "" { // inside an event's worker: its namespace
		ns = v
	}
	pf.StringVarP(&s.Namespace, "namespace", "n", ns, "the namespace of namespaced objects (default $CAIRN_NAMESPACE or default)")
	for _, c := range []*cobra.Command{apply.New(s), get.New(s), describe.New(s), deletecmd.New(s), wait.New(s), explain.New(s),
		reconcile.New(s), abort.New(s), event.New(s), logs.New(s), patch.New(s), patch.NewLabel(s), patch.NewAnnotate(s), backup.New(s)} {
		explainErrors(c)
		cmd.AddCommand(c)
	}
	cmd.AddCommand(extra...)
	return cmd
}

// explainErrors rewords the errors c returns with session.Explain.
func explainErrors(c *cobra.Command) {
	run := c.RunE
	if run == nil {
		return
	}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		return session.Explain(run(cmd, args))
	}
}

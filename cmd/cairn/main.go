// Command cairn is the cairn control plane: `cairn server` runs it, the
// other commands talk to it.
package main

import (
	"context"
	"os"

	"cairn.dev/cairn/cli/controllermanager"
	"cairn.dev/cairn/cli/restore"
	"cairn.dev/cairn/cli/root"
	"cairn.dev/cairn/cli/serve"
	"cairn.dev/cairn/cli/session"
)

func main() {
	cmd := root.New(session.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, serve.New(), controllermanager.New(), restore.New())
	// Cobra prints the error ("Error: ...") itself; usage is silenced.
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		os.Exit(1)
	}
}

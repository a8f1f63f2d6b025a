// Package clitest runs `cairn` commands in-process for tests, against a
// real test server, with buffers for the streams.
package clitest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cairn.dev/cairn/cli/root"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

// Buffer is a bytes.Buffer safe for a command writing while a test
// reads (testkit.Buffer).
type Buffer = testkit.Buffer

// Result is the outcome of one command run.
type Result struct {
	Out, Err string
	// Error is what Execute returned.
	Error error
}

// Cmd describes a command run: the arguments (without "cairn") and, for
// reading `-f -`, standard input.
type Cmd struct {
	Args  []string
	Stdin string
}

// Run runs `cairn args...` against the server cfg names, with its token
// and CA (flags --server, --token and --certificate-authority, and a
// --config file that does not exist, so the user's own config is never
// read). It blocks until the command returns.
func Run(t testing.TB, cfg client.Config, args ...string) Result {
	t.Helper()
	return RunContext(context.Background(), t, cfg, Cmd{Args: args}, nil)
}

// RunContext is Run with a context (cancel it to end a watch), standard
// input, and out, when not nil, receiving the output as it is written.
func RunContext(ctx context.Context, t testing.TB, cfg client.Config, c Cmd, out *Buffer) Result {
	t.Helper()
	if out == nil {
		out = &Buffer{}
	}
	var errOut Buffer
	var global []string
	if cfg.Server != "" {
		global = append(global, "--server", cfg.Server)
	}
	if cfg.Token != "" {
		global = append(global, "--token", cfg.Token)
	}
	if ca := caFile(t, cfg); ca != "" {
		global = append(global, "--certificate-authority", ca)
	}
	global = append(global, "--config", filepath.Join(t.TempDir(), "no-config"))
	cmd := root.New(root.IOStreams{In: strings.NewReader(c.Stdin), Out: out, ErrOut: &errOut})
	cmd.SetArgs(append(global, c.Args...))
	err := cmd.ExecuteContext(ctx)
	return Result{Out: out.String(), Err: errOut.String(), Error: err}
}

var _ io.Writer = (*Buffer)(nil)

// caFile is a file holding cfg's CA (its CAFile, or its data written to a
// temporary file); "" when cfg has none.
func caFile(t testing.TB, cfg client.Config) string {
	if cfg.CAFile != "" || cfg.CertificateAuthorityData == "" {
		return cfg.CAFile
	}
	path := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(path, []byte(cfg.CertificateAuthorityData), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

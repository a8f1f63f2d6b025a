package root_test

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/cli/root"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/server/servertest"
)

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestRoot_ServerDownSaysHowToStartIt(t *testing.T) {
	url := freeAddr(t)
	for _, args := range [][]string{
		{"get", "secrets"},
		{"apply", "-f", filepath.Join("..", "..", "examples", "namespace.yaml")},
		{"delete", "secret", "x"},
		{"describe", "ns", "default"},
		{"wait", "ns", "x", "--for", "delete"},
	} {
		r := clitest.Run(t, client.Config{Server: url, Token: "tok"}, args...)
		want := "Error: cannot reach the cairn server at " + url + ": connection refused — start it with 'cairn server'\n"
		if r.Error == nil || r.Err != want {
			t.Errorf("%v: stderr %q, want %q", args, r.Err, want)
		}
	}
}

func TestRoot_RejectedTokenSaysWhereItCameFrom(t *testing.T) {
	srv := servertest.Start(t)
	cfg := srv.Config()
	cfg.Token = "not-a-token"
	r := clitest.Run(t, cfg, "get", "secrets")
	if r.Error == nil || !strings.Contains(r.Err, "rejected the token from the --token flag") {
		t.Errorf("flag token: stderr %q", r.Err)
	}

	t.Setenv(client.EnvToken, "also-wrong")
	cfg.Token = ""
	r = clitest.Run(t, cfg, "get", "secrets")
	if r.Error == nil || !strings.Contains(r.Err, "rejected the token from the "+client.EnvToken+" environment variable") {
		t.Errorf("env token: stderr %q", r.Err)
	}
}

func TestRoot_ConfigResolution(t *testing.T) {
	srv := servertest.Start(t)
	cfgPath := filepath.Join(t.TempDir(), "config")
	if err := client.WriteConfig(cfgPath, srv.Config()); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		cmd := root.New(root.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), errOut.String(), err
	}
	t.Setenv(client.EnvServer, "")
	t.Setenv(client.EnvToken, "")

	// The config file alone is enough.
	if out, errOut, err := run("--config", cfgPath, "get", "ns", "default", "-o", "name"); err != nil || out != "namespace/default\n" {
		t.Fatalf("config file: %q %q %v", out, errOut, err)
	}
	// The environment overrides the file, and a flag overrides both.
	t.Setenv(client.EnvToken, "wrong-env")
	if _, errOut, _ := run("--config", cfgPath, "get", "ns"); !strings.Contains(errOut, client.EnvToken) {
		t.Errorf("env did not override the file: %q", errOut)
	}
	if out, errOut, err := run("--config", cfgPath, "--token", srv.Token, "get", "ns", "default", "-o", "name"); err != nil || out != "namespace/default\n" {
		t.Errorf("flag did not override env: %q %q %v", out, errOut, err)
	}
	t.Setenv(client.EnvServer, freeAddr(t))
	if _, errOut, _ := run("--config", cfgPath, "get", "ns"); !strings.Contains(errOut, "cannot reach") {
		t.Errorf("%s did not override the file: %q", client.EnvServer, errOut)
	}

	// A config file that does not parse is named.
	bad := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(bad, []byte("server: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, err := run("--config", bad, "get", "ns"); err == nil || !strings.Contains(errOut, bad) {
		t.Errorf("bad config: %q %v", errOut, err)
	}
}

func TestRoot_ExtraCommandsAndHelp(t *testing.T) {
	var out bytes.Buffer
	cmd := root.New(root.IOStreams{Out: &out, ErrOut: &out}, &cobra.Command{Use: "server", Run: func(*cobra.Command, []string) {}})
	for _, name := range []string{"apply", "get", "describe", "delete", "wait", "server"} {
		if c, _, err := cmd.Find([]string{name}); err != nil || c.Name() != name {
			t.Errorf("command %s missing: %v", name, err)
		}
	}
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil || !strings.Contains(out.String(), "--namespace") {
		t.Errorf("help: %v\n%s", err, out.String())
	}
}

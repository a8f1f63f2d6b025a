package serve_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

func TestServer_NamespaceLimitFlagsSetTheDefaults(t *testing.T) {
	bin := clitest.BuildCairn(t)
	home := t.TempDir()
	cmd := exec.Command(bin, append([]string{"server", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--namespace-max-objects", "2", "--namespace-max-bytes", "1Mi"}, clitest.RuntimeFlags(t, filepath.Join(t.TempDir(), "runtime"))...)...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	clitest.Start(t, cmd)
	cfg, err := client.LoadConfig(filepath.Join(home, ".cairn", "config"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewHTTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		if _, err := c.Create(ctx, testkit.Secret("default", name, map[string]string{"k": "v"})); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.Create(ctx, testkit.Secret("default", "c", map[string]string{"k": "v"}))
	want := `namespace "default" has reached its limit of 2 objects (spec.limits.objects is unset: the server's default applies)`
	if !errors.Is(err, api.ErrForbidden) || !strings.Contains(err.Error(), want) {
		t.Fatalf("third create: %v; want Forbidden saying %s", err, want)
	}
	big := strings.Repeat("x", 1<<20)
	if _, err := c.Create(ctx, namespaceNamed("roomy", `{"limits":{"objects":10}}`)); err != nil {
		t.Fatal(err)
	}
	_, err = c.Create(ctx, testkit.Secret("roomy", "big", map[string]string{"k": big}))
	if !errors.Is(err, api.ErrForbidden) || !strings.Contains(err.Error(), "limit of 1048576 bytes") {
		t.Fatalf("create over the default bytes limit: %v", err)
	}
}

func namespaceNamed(name, spec string) *api.Object {
	return testkit.Object(api.KindNamespace, "", name, testkit.Spec(spec))
}

func TestServer_BadNamespaceLimitFlagsAreClearErrors(t *testing.T) {
	bin := clitest.BuildCairn(t)
	cases := []struct{ flag, value string }{
		{"--namespace-max-objects", "-1"},
		{"--namespace-max-bytes", "lots"},
		{"--namespace-max-bytes", "-1Mi"},
		{"--namespace-max-bytes", "100m"},
	}
	for _, c := range cases {
		out, err := exec.Command(bin, "server", c.flag, c.value, "--data-dir", t.TempDir()).CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || !strings.Contains(string(out), c.flag) {
			t.Errorf("%s %s: err %v, output %q", c.flag, c.value, err, out)
		}
	}
}

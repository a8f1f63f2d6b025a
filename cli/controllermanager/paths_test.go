package controllermanager_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/server/servertest"
)

// TestControllerManager_RelativePathsAndASharedRuntimeDir starts a
// controller-manager with relative --certificate-authority, --token-file
// and --runtime-dir (as the README writes them), then a second one in the
// same directory: the second is refused, naming --runtime-dir as the fix.
func TestControllerManager_RelativePathsAndASharedRuntimeDir(t *testing.T) {
	bin := clitest.BuildCairn(t)
	srv := servertest.Start(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), srv.CA, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(srv.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"controller-manager", "--server", srv.URL, "--certificate-authority", "ca.crt",
		"--token-file", "token", "--listen", "127.0.0.1:0"}, clitest.RuntimeFlags(t, "runtime")...)
	first := exec.Command(bin, args...)
	first.Dir = dir
	clitest.Start(t, first)

	second := exec.Command(bin, args...)
	second.Dir = dir
	out, err := second.CombinedOutput()
	var exit *exec.ExitError
	want := "--runtime-dir " + filepath.Join(dir, "runtime") + " is in use by another controller-manager"
	if !errors.As(err, &exit) || !strings.Contains(string(out), want) || !strings.Contains(string(out), "a directory of its own with --runtime-dir") {
		t.Fatalf("second manager on the same runtime dir: err %v, output:\n%s\nwant it to say %q and how to fix it", err, out, want)
	}
}

package serve_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"cairn.dev/cairn/cli/clitest"
)

// TestServer_EtcdMaxTxnOpsBelowTheMinimumIsAClearError starts `cairn
// server` with a transaction limit too small for one object's write: it
// refuses to start, naming the flag and the minimum.
func TestServer_EtcdMaxTxnOpsBelowTheMinimumIsAClearError(t *testing.T) {
	bin := clitest.BuildCairn(t)
	out, err := exec.Command(bin, "server", "--etcd-max-txn-ops", "8", "--data-dir", t.TempDir(), "--write-config=false").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "--etcd-max-txn-ops must be at least 35") {
		t.Fatalf("err %v, output %q", err, out)
	}
}

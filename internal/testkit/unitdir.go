package testkit

import (
	"os"
	"path/filepath"
	"testing"
)

// UnitReachable lets the units of a local runtime, which run as users of
// their own when the tests run as root, pass through the test's temporary
// directory: the parent of every t.TempDir() of t (0700 by default) gets
// mode 0711, so that others may pass through it but not list it. The
// directories t.TempDir() returns are 0755 already, so a unit can then
// reach a runtime root, read a script or see a file created in one of them.
func UnitReachable(t testing.TB) {
	t.Helper()
	if err := os.Chmod(filepath.Dir(t.TempDir()), 0o711); err != nil {
		t.Fatal(err)
	}
}

// UnitWritableDir returns a new t.TempDir() that units running as other
// users may also write in (mode 01777, as /tmp: nobody removes another's
// files), for the files a test's units leave for the test to read.
func UnitWritableDir(t testing.TB) string {
	t.Helper()
	UnitReachable(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	return dir
}

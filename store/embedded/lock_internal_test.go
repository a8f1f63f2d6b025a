package embedded

import (
	"errors"
	"os/exec"
	"testing"
	"time"
)

// A server killed while it starts a process leaves the half-started child
// holding a copy of the lock's descriptor for a moment: a restart right
// away waits for it instead of reporting the dir in use (it was refused
// before, as the soak's restarts found).
func TestLockDir_WaitsForAChildThatOutlivesItsServerForAMoment(t *testing.T) {
	dir := t.TempDir()
	f, err := lockDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "0.5")
	child.ExtraFiles = append(child.ExtraFiles, f) // inherited, as a child not yet exec'd holds it
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Wait() })
	f.Close() // the server is gone; its child still holds the lock

	again, err := lockDir(dir, lockWait)
	if err != nil {
		t.Fatalf("lock after the server is gone, its child holding the lock for 0.5 s: %v, want it taken once the child lets go", err)
	}
	again.Close()
}

// A holder that keeps the lock (a live server) is still refused once the
// wait is over.
func TestLockDir_RefusesAHolderThatKeepsTheLock(t *testing.T) {
	dir := t.TempDir()
	f, err := lockDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := lockDir(dir, 200*time.Millisecond); !errors.Is(err, ErrDataDirInUse) {
		t.Fatalf("second lock: %v, want ErrDataDirInUse", err)
	}
}

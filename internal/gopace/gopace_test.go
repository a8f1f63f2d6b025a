package gopace

import (
	"runtime/debug"
	"testing"
)

// restoreGC puts the process's collector settings back after the test.
func restoreGC(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
}

func TestSet_PacesAServerWithASoftLimitBelowTheAvailableMemory(t *testing.T) {
	restoreGC(t)
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	p := Set()
	if got := debug.SetGCPercent(100); got != ServerPercent || p.Percent != ServerPercent {
		t.Fatalf("GOGC %d (reported %d), want %d", got, p.Percent, ServerPercent)
	}
	avail := availableMemory()
	if avail <= 0 {
		t.Fatal("the available memory could not be read on this Linux machine")
	}
	if got := debug.SetMemoryLimit(-1); got != p.MemoryLimit || p.MemoryLimit != avail/4*3 {
		t.Fatalf("memory limit %d (reported %d), want three quarters of %d", got, p.MemoryLimit, avail)
	}
}

func TestSet_LeavesWhatTheEnvironmentChose(t *testing.T) {
	restoreGC(t)
	t.Setenv("GOGC", "50")
	t.Setenv("GOMEMLIMIT", "1GiB")
	before := debug.SetMemoryLimit(-1)
	if p := Set(); p != (Pace{}) {
		t.Fatalf("set %+v although GOGC and GOMEMLIMIT are set", p)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC changed to %d", got)
	}
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("memory limit changed to %d", got)
	}
}

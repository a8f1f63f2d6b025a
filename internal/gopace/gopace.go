// Package gopace paces the Go garbage collector of a cairn server process.
package gopace

import (
	"bufio"
	"bytes"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// How a server process paces Go's garbage collector.
//
// Most of what a control plane allocates lives for one request or one
// reconcile: JSON decoded from the store, re-encoded, compared, dropped.
// With Go's default pace (GOGC=100) the collector runs each time the heap
// doubles, and under a burst of writes it took a third of the CPU
// (docs/benchmarks.md). A server therefore lets the heap grow to four
// times what is live (GOGC=300) before collecting, and caps that with a
// soft memory limit of three quarters of the memory the process may use
// (its cgroup's limit, else the machine's), so that a large store makes
// the collector run more often instead of exhausting memory. GOGC and
// GOMEMLIMIT, when set, win over both.
const (
	// ServerPercent is the GOGC of a server process.
	ServerPercent = 300
	// serverMemoryShare is the share of the available memory (in
	// quarters) the soft limit allows.
	serverMemoryShare = 3
)

// Pace is what Set set: the collector's percent and the soft memory
// limit (0: left as it was).
type Pace struct {
	Percent     int
	MemoryLimit int64
}

// Set sets this process's garbage collector as a server's (see above),
// unless GOGC or GOMEMLIMIT chose otherwise, and returns what it set. The
// `cairn server` and `cairn controller-manager` commands call it once at
// start; so do the benchmarks, which measure what a server does.
func Set() Pace {
	var p Pace
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(ServerPercent)
		p.Percent = ServerPercent
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if avail := availableMemory(); avail > 0 {
			p.MemoryLimit = avail / 4 * serverMemoryShare
			debug.SetMemoryLimit(p.MemoryLimit)
		}
	}
	return p
}

// availableMemory is the memory this process may use: its cgroup's limit
// (v2, then v1) when there is one, else the machine's; 0 when neither can
// be read (not Linux).
func availableMemory() int64 {
	total := machineMemory()
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// "max" (v2) or a huge number (v1) means no limit.
		if n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64); err == nil && n > 0 && n < 1<<60 && (total == 0 || n < total) {
			return n
		}
	}
	return total
}

// machineMemory reads MemTotal from /proc/meminfo; 0 when it cannot.
func machineMemory() int64 {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kib, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0
			}
			return kib << 10
		}
	}
	return 0
}

// Log says how the collector was paced.
func (p Pace) Log(log *slog.Logger) {
	gogc, limit := "GOGC (environment)", "GOMEMLIMIT (environment)"
	if p.Percent > 0 {
		gogc = strconv.Itoa(p.Percent)
	}
	switch {
	case p.MemoryLimit > 0:
		limit = strconv.FormatInt(p.MemoryLimit>>20, 10) + "MiB"
	case os.Getenv("GOMEMLIMIT") == "":
		limit = "none (the available memory is unknown)"
	}
	log.Info("garbage collector paced", "gogc", gogc, "memoryLimit", limit)
}

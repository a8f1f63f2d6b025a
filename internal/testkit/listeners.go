package testkit

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ListeningTCP maps the inode of each TCP socket this process listens on
// to its port, from /proc/self/net/tcp{,6} (state 0A is LISTEN) and the
// sockets among /proc/self/fd.
func ListeningTCP(t testing.TB) map[string]int {
	t.Helper()
	own := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err != nil {
			continue // closed since the listing
		}
		if ino, ok := strings.CutPrefix(link, "socket:["); ok {
			own[strings.TrimSuffix(ino, "]")] = true
		}
	}
	out := map[string]int{}
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(table)
		if errors.Is(err, os.ErrNotExist) {
			continue // no IPv6
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
			// sl local_address rem_address st queues tr:when retrnsmt uid timeout inode ...
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !own[f[9]] {
				continue
			}
			port, err := strconv.ParseUint(f[1][strings.LastIndexByte(f[1], ':')+1:], 16, 16)
			if err != nil {
				t.Fatalf("%s: bad local address in %q", table, line)
			}
			out[f[9]] = int(port)
		}
	}
	return out
}

// NewListeners returns the ports of listeners in after that are not in
// before.
func NewListeners(before, after map[string]int) []int {
	var ports []int
	for ino, port := range after {
		if _, ok := before[ino]; !ok {
			ports = append(ports, port)
		}
	}
	return ports
}

package bench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/cli/clitest"
)

// soakProc is one incarnation of the soak's server process; its output
// goes to a file of its own (server-N.log beside the data dir), so that
// half an hour of logs does not sit in memory and every incarnation's log
// can be read after a failure.
type soakProc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startProc starts incarnation n of the server with args and blocks until
// its log shows the ready line (nil error), it exits first, or 60 s pass.
func startProc(t *testing.T, bin, dir string, n int, args []string) (*soakProc, error) {
	t.Helper()
	p := &soakProc{cmd: exec.Command(bin, args...), log: filepath.Join(dir, fmt.Sprintf("server-%d.log", n)), done: make(chan struct{})}
	f, err := os.OpenFile(p.log, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.done })
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if p.ready() {
			return p, nil
		}
		select {
		case <-p.done:
			if p.ready() {
				return p, nil
			}
			return nil, fmt.Errorf("server %d exited before it was ready: %s", n, p.tail(3))
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("server %d not ready after 60s: %s", n, p.tail(3))
}

// ready reports whether the log has the ready line.
func (p *soakProc) ready() bool {
	b, _ := os.ReadFile(p.log)
	return clitest.ReadyLine.Match(b)
}

// tail returns the last n lines of the log, on one line.
func (p *soakProc) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// kill sends SIGKILL and blocks until the process has been reaped (at
// most 30 s, else the test fails).
func (p *soakProc) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("server still running 30s after SIGKILL; its log: %s", p.log)
	}
}

// lockHolders lists the processes that have path open, as "pid (command
// line)": who holds a lock file.
func lockHolders(path string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range procs {
		if target, err := os.Readlink(fd); err == nil && target == path {
			pid := strings.Split(fd, "/")[2]
			cmdline, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
			out = append(out, fmt.Sprintf("%s (%s)", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return out
}

// logWarnings counts the WARN and ERROR lines of the server logs (the
// server-*.log files in dir) by message.
func logWarnings(dir string) map[string]int {
	out := map[string]int{}
	logs, _ := filepath.Glob(filepath.Join(dir, "server-*.log"))
	for _, path := range logs {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.Contains(line, "level=WARN") && !strings.Contains(line, "level=ERROR") {
				continue
			}
			_, msg, ok := strings.Cut(line, "msg=")
			if !ok {
				continue
			}
			if strings.HasPrefix(msg, `"`) {
				msg, _, _ = strings.Cut(msg[1:], `"`)
			} else {
				msg, _, _ = strings.Cut(msg, " ")
			}
			out[msg]++
		}
		f.Close()
	}
	return out
}

package clitest

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

// BuildCairn compiles the cairn binary into a temporary directory of t and
// returns its path.
func BuildCairn(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cairn")
	out, err := exec.Command("go", "build", "-o", bin, "cairn.dev/cairn/cmd/cairn").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// Proc is a cairn process started by Start.
type Proc struct {
	Cmd *exec.Cmd
	// URL is the address its ready line announced.
	URL  string
	log  *procLog
	done chan struct{}
}

// ReadyLine matches the line `cairn server` and `cairn controller-manager`
// log once they serve; its first group is the URL.
var ReadyLine = regexp.MustCompile(`cairn (?:server|controller-manager) ready"? url=(https?://\S+)`)

// Start runs cmd (whose Stdout and Stderr it sets), waits until it logs its
// ready line and returns it. The process is killed at test cleanup, and
// its log is printed if the test failed.
func Start(t testing.TB, cmd *exec.Cmd) *Proc {
	t.Helper()
	p := &Proc{Cmd: cmd, log: &procLog{ready: make(chan string, 1)}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("log of %s (%s):\n%s", cmd.Args, p.URL, p.log.String())
		}
	})
	select {
	case p.URL = <-p.log.ready:
	case <-p.done:
		t.Fatalf("%s exited before it was ready:\n%s", cmd.Args, p.log.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s not ready after 60s:\n%s", cmd.Args, p.log.String())
	}
	return p
}

// Kill sends SIGKILL and waits until the process is gone.
func (p *Proc) Kill(t testing.TB) {
	t.Helper()
	_ = p.Cmd.Process.Kill()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s still running 30s after SIGKILL", p.URL)
	}
}

// Done is closed once the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Log returns everything the process wrote so far.
func (p *Proc) Log() string { return p.log.String() }

// procLog collects a process's output and reports the URL of its ready
// line. It is safe for concurrent use.
type procLog struct {
	mu      sync.Mutex
	all     bytes.Buffer
	partial []byte
	ready   chan string
}

func (l *procLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Write(b)
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		if m := ReadyLine.FindStringSubmatch(line); m != nil {
			select {
			case l.ready <- m[1]:
			default:
			}
		}
	}
	return len(b), nil
}

func (l *procLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all.String()
}

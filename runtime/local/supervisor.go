package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
	"unsafe"
)

// Every unit's command runs under a small supervisor: the binary that owns
// the runtime, started again in supervisor mode. The supervisor is the
// command's parent, so it alone learns the command's exit status, and it
// writes that status to the unit's directory. That is how a unit's real exit
// code survives a restart (or a crash) of the owning process, which is not
// the command's parent any more after it restarted.
//
// The supervisor lives in its own session; the command gets its own process
// group inside it, which Kill signals. So a Kill, even a forced one, never
// hits the supervisor, and the status is recorded however the command ends.
// When the command has ended, the supervisor kills whatever it left running
// in its process group, before it collects the command's status (while the
// command is an unreaped zombie its group id cannot be reused), so no process
// of a unit outlives it.
//
// Protocol: the owner starts the supervisor with argv
// [exe, supervisorArg, unitDir] and the environment supervisorEnv=protocol
// only; fd 0 is /dev/null, fds 1 and 2 are the unit's log, fd 3 carries the
// launch (JSON, then EOF) and fd 4 takes the report (JSON, then EOF). The
// supervisor writes proc.json (the command's identity) before it reports
// and exit.json (the outcome) when the command has ended or failed to
// start.
const (
	supervisorArg      = "cairn-runtime-supervisor"
	supervisorEnv      = "CAIRN_RUNTIME_SUPERVISOR"
	supervisorProtocol = "1"
)

// init turns any binary that links this package into a supervisor when it
// was started as one, before its own main (or a test binary's TestMain)
// runs. Both the argument and the environment must say so; the environment
// of a supervisor holds nothing else, so an ordinary start of the binary
// never gets here.
func init() {
	if os.Getenv(supervisorEnv) != supervisorProtocol {
		return
	}
	switch {
	case len(os.Args) == 3 && os.Args[1] == supervisorArg:
		os.Exit(supervise(os.Args[2]))
	case len(os.Args) == 4 && os.Args[1] == reaperArg:
		os.Exit(runReaper(os.Args[2:]))
	}
}

// launch is what the owner sends the supervisor. It holds the unit's
// environment, so it travels through a pipe and never touches the disk.
type launch struct {
	Path string   `json:"path"`
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	// User, when set, is whom the command runs as, with no supplementary
	// groups; the supervisor itself stays root.
	User *credential `json:"user,omitempty"`
}

// report is the supervisor's answer: the command's identity, or why it did
// not start.
type report struct {
	Process procID `json:"process,omitzero"`
	Error   string `json:"error,omitempty"`
}

// procFile is proc.json: the running command.
type procFile struct {
	Process procID    `json:"process"`
	Started time.Time `json:"started"`
}

// exitFile is exit.json: how the command ended, or why it never started.
type exitFile struct {
	Code       int       `json:"code"`
	Signal     string    `json:"signal,omitempty"`
	StartError string    `json:"startError,omitempty"`
	Ended      time.Time `json:"ended"`
}

const (
	stateFile     = "state.json"
	procFileName  = "proc.json"
	exitFileName  = "exit.json"
	logFileName   = "log"
	workspaceName = "workspace"
)

// supervise runs one unit's command and records its outcome in unitDir.
// It returns the supervisor's own exit code, which nobody relies on.
func supervise(unitDir string) int {
	// The owner's pipes must not leak into the command.
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	in, out := os.NewFile(3, "launch"), os.NewFile(4, "report")
	defer out.Close()
	send := func(r report) {
		_ = json.NewEncoder(out).Encode(r)
		_ = out.Close()
	}
	fail := func(reason string) int {
		if err := writeJSON(filepath.Join(unitDir, exitFileName),
			exitFile{Code: -1, StartError: reason, Ended: time.Now()}); err != nil {
			fmt.Fprintf(os.Stderr, "cairn runtime: recording the start failure: %v\n", err)
		}
		send(report{Error: reason})
		return 1
	}

	var l launch
	err := json.NewDecoder(in).Decode(&l)
	_ = in.Close()
	if err != nil {
		return fail(fmt.Sprintf("the owner stopped before it launched the command (%v)", err))
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return fail(fmt.Sprintf("cannot open %s: %v", os.DevNull, err))
	}
	sys := &syscall.SysProcAttr{Setpgid: true}
	if l.User != nil {
		sys.Credential = &syscall.Credential{Uid: l.User.UID, Gid: l.User.GID, Groups: []uint32{}}
	}
	p, err := os.StartProcess(l.Path, l.Argv, &os.ProcAttr{
		Dir:   l.Dir,
		Env:   l.Env,
		Files: []*os.File{devnull, os.Stdout, os.Stderr},
		Sys:   sys,
	})
	_ = devnull.Close()
	if err != nil {
		return fail(startReason(l.Path, l.User, err))
	}
	boot := bootID()
	id, err := identify(p.Pid, boot) // an unreaped child: always readable
	if err != nil {
		id = procID{Pid: p.Pid, Boot: boot}
	}
	if err := writeJSON(filepath.Join(unitDir, procFileName), procFile{Process: id, Started: time.Now()}); err != nil {
		fmt.Fprintf(os.Stderr, "cairn runtime: recording the process: %v\n", err)
	}
	send(report{Process: id})

	// Signals meant for the unit reach its process group, not this one;
	// these are ignored so that a broadcast (a shutdown, a hangup) cannot
	// end the supervisor before it records the outcome. Set after the start,
	// so the command does not inherit them.
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)

	waitNoReap(p.Pid)
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL) // whatever the command left behind
	st, err := p.Wait()
	rec := exitFile{Code: -1, Ended: time.Now()}
	if err == nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			rec.Code = 128 + int(ws.Signal())
			rec.Signal = signalName(ws.Signal())
		} else {
			rec.Code = st.ExitCode()
		}
	}
	if err := writeJSON(filepath.Join(unitDir, exitFileName), rec); err != nil {
		fmt.Fprintf(os.Stderr, "cairn runtime: recording the exit status: %v\n", err)
		return 1
	}
	return 0
}

// startReason explains why the command could not be started, as whom.
func startReason(path string, user *credential, err error) string {
	var perr *os.PathError
	if errors.As(err, &perr) {
		err = perr.Err
	}
	if user != nil && errors.Is(err, syscall.EACCES) {
		return fmt.Sprintf("cannot start %q: %v: the unit runs as uid %d, which must be able to execute it "+
			"and to pass through every directory above it and above its working directory", path, err, user.UID)
	}
	return fmt.Sprintf("cannot start %q: %v", path, err)
}

// waitNoReap blocks until the child pid has ended, leaving it a zombie
// (waitid with WNOWAIT), so that its pid and process group id stay taken.
func waitNoReap(pid int) {
	const pPID = 1     // P_PID
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
}

// signalName names a signal the way people write it (SIGTERM).
func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
		syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
		syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
		syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
		syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return fmt.Sprintf("%d (%v)", int(s), s)
}

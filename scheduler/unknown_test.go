package scheduler_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/runtime"
	"cairn.dev/cairn/scheduler"
)

// errNoAnswer is what the silent runtime answers.
var errNoAnswer = errors.New("the runtime does not answer (cut by the test)")

// silentRuntime is a real runtime that the test can cut off: while cut,
// every call fails and the waits in progress end with that failure, as
// a cluster runtime's calls do when its cluster cannot be reached.
type silentRuntime struct {
	runtime.Runtime

	mu    sync.Mutex
	cut   bool
	waits map[*context.CancelFunc]bool
}

func (r *silentRuntime) setCut(cut bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = cut
	if cut {
		for c := range r.waits {
			(*c)()
		}
	}
}

func (r *silentRuntime) isCut() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cut
}

func (r *silentRuntime) State(ctx context.Context, id string) (runtime.State, error) {
	if r.isCut() {
		return runtime.State{}, errNoAnswer
	}
	return r.Runtime.State(ctx, id)
}

func (r *silentRuntime) Wait(ctx context.Context, id string) (runtime.State, error) {
	r.mu.Lock()
	if r.cut {
		r.mu.Unlock()
		return runtime.State{}, errNoAnswer
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.waits[&cancel] = true
	r.mu.Unlock()
	st, err := r.Runtime.Wait(wctx, id)
	r.mu.Lock()
	delete(r.waits, &cancel)
	r.mu.Unlock()
	if ctx.Err() == nil && wctx.Err() != nil {
		return st, errNoAnswer
	}
	return st, err
}

func (r *silentRuntime) Kill(ctx context.Context, id string) error {
	if r.isCut() {
		return errNoAnswer
	}
	return r.Runtime.Kill(ctx, id)
}

func (r *silentRuntime) Cleanup(ctx context.Context, id string) error {
	if r.isCut() {
		return errNoAnswer
	}
	return r.Runtime.Cleanup(ctx, id)
}

func (r *silentRuntime) List(ctx context.Context) ([]runtime.Unit, error) {
	if r.isCut() {
		return nil, errNoAnswer
	}
	return r.Runtime.List(ctx)
}

func phaseIs(p api.EventPhase) func(*api.Event) bool {
	return func(ev *api.Event) bool { return ev.Status.Worker.Phase == p }
}

// TestObserver_RuntimeThatDoesNotAnswerMakesTheWorkerUnknown: while the
// runtime does not answer, a running worker is UNKNOWN (not FAILED); once
// it answers again the worker is RUNNING again; UNKNOWN is cancelable
// (ABORTED), and the unit is killed and cleaned up once the runtime
// answers.
func TestObserver_RuntimeThatDoesNotAnswerMakesTheWorkerUnknown(t *testing.T) {
	o := startObserver(t)
	silent := &silentRuntime{waits: map[*context.CancelFunc]bool{}}
	o.run(scheduler.Options{}, nil, func(rt runtime.Runtime) runtime.Runtime { silent.Runtime = rt; return silent })
	o.project("p", api.ProjectSpec{WorkerTemplate: api.WorkerSpec{Command: []string{"sleep", "300"}}})
	ev := o.create("p")
	o.until(ev.Name, "the worker RUNNING", phaseIs(api.PhaseRunning))

	silent.setCut(true)
	got := o.until(ev.Name, "the worker UNKNOWN", func(ev *api.Event) bool { return ev.Status.Worker.Phase != api.PhaseRunning })
	if w := got.Status.Worker; w.Phase != api.PhaseUnknown || !strings.Contains(w.Reason, "does not answer") {
		t.Fatalf("with the runtime silent the worker is %s (%q), want UNKNOWN saying the runtime does not answer", w.Phase, w.Reason)
	}
	silent.setCut(false)
	if w := o.until(ev.Name, "the worker RUNNING again", func(ev *api.Event) bool { return ev.Status.Worker.Phase != api.PhaseUnknown }).Status.Worker; w.Phase != api.PhaseRunning || w.Reason != "" {
		t.Fatalf("with the runtime answering again the worker is %s (%q), want RUNNING", w.Phase, w.Reason)
	}

	silent.setCut(true)
	o.until(ev.Name, "the worker UNKNOWN again", phaseIs(api.PhaseUnknown))
	if _, err := o.c.Action(context.Background(), client.ActionRequest{Kind: api.KindEvent, Namespace: "default", Name: ev.Name, Action: "cancel"}); err != nil {
		t.Fatalf("cancel an UNKNOWN event: %v", err)
	}
	o.until(ev.Name, "the worker ABORTED", phaseIs(api.PhaseAborted))
	silent.setCut(false)
	id := api.WorkerUnitID(ev.UID)
	testkit.Eventually(t, wait, "the aborted worker's unit killed and cleaned up", func() bool {
		st, err := o.rt.State(context.Background(), id)
		return err == nil && st.Phase.Done() && !exists(filepath.Join(o.root, "units", id, "workspace"))
	})
}

// TestObserver_UnitLostAcrossARestartIsUnknownThenFailed: the worker's
// unit and its supervisor are killed while the process running the
// scheduler is down, so the runtime finds it Lost on restart (its exit
// status unknown). The worker is UNKNOWN, not FAILED; the runtime never
// knows it again, so after UnknownTimeout it is FAILED with a reason
// saying so.
func TestObserver_UnitLostAcrossARestartIsUnknownThenFailed(t *testing.T) {
	o := startObserver(t)
	const bound = 3 * time.Second
	opts := scheduler.Options{UnknownTimeout: bound, GracePeriod: time.Second}
	o.run(opts, nil, nil)
	pidFile := filepath.Join(testkit.UnitWritableDir(t), "pids")
	o.project("p", api.ProjectSpec{WorkerTemplate: api.WorkerSpec{Command: []string{"sh", "-c", `echo $$ $PPID > "$PIDFILE"; sleep 300`},
		Env: map[string]string{"PIDFILE": pidFile}}})
	ev := o.create("p")
	o.until(ev.Name, "the worker RUNNING", phaseIs(api.PhaseRunning))
	var pids []int
	testkit.Eventually(t, wait, "the worker's pids", func() bool {
		pids = readPids(pidFile)
		return len(pids) == 2
	})
	o.stop()
	command, supervisor := pids[0], pids[1]
	if err := syscall.Kill(supervisor, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-command, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, wait, "the unit's processes gone", func() bool {
		return processGone(command) && processGone(supervisor)
	})

	o.run(opts, nil, nil)
	got := o.until(ev.Name, "the lost worker observed", func(ev *api.Event) bool { return ev.Status.Worker.Phase != api.PhaseRunning })
	if w := got.Status.Worker; w.Phase != api.PhaseUnknown || !strings.HasPrefix(w.Reason, "lost: ") {
		t.Fatalf("the lost worker is %s (%q), want UNKNOWN, lost", w.Phase, w.Reason)
	}
	unknownAt := time.Now()
	w := o.until(ev.Name, "the worker given up on", func(ev *api.Event) bool { return ev.Status.Worker.Phase != api.PhaseUnknown }).Status.Worker
	if w.Phase != api.PhaseFailed || !strings.Contains(w.Reason, "never knew it again") {
		t.Fatalf("after the bound the worker is %s (%q), want FAILED saying the runtime never knew it again", w.Phase, w.Reason)
	}
	if took := time.Since(unknownAt); took > bound+5*time.Second {
		t.Fatalf("UNKNOWN lasted %s, want about %s", took, bound)
	}
}

// readPids reads the pids a unit wrote into file, if it has.
func readPids(file string) []int {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil
		}
		pids = append(pids, n)
	}
	return pids
}

// processGone reports whether pid no longer runs (a zombie waiting for its
// parent counts as gone, as for the runtime).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	s := string(b)
	rest := s[strings.LastIndexByte(s, ')')+2:]
	return rest[0] == 'Z' || rest[0] == 'X'
}

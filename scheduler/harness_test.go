package scheduler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
)

// wait is the bound of every wait for the controllers (CI is slow).
const wait = 60 * time.Second

// harness is a whole cairn server with its controllers, whose events run
// as real processes.
type harness struct {
	t   *testing.T
	d   *daemon.Daemon
	c   client.Interface
	dir string
	rt  string // the runtime dir, kept across restarts
	cfg controllers.Config
}

func startHarness(t *testing.T, cfg controllers.Config) *harness {
	t.Helper()
	testkit.UnitReachable(t)
	h := &harness{t: t, dir: filepath.Join(t.TempDir(), "data"), rt: filepath.Join(t.TempDir(), "runtime"), cfg: cfg}
	h.start()
	return h
}

func (h *harness) start() {
	h.t.Helper()
	opts := daemon.Options{Listen: "127.0.0.1:0", DataDir: h.dir, RuntimeDir: h.rt,
		Controllers: controllers.List(h.cfg), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	clitest.RuntimeDefaults(h.t, &opts)
	d, err := daemon.Start(context.Background(), opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = d.Stop() })
	c, err := client.NewHTTP(d.ClientConfig())
	if err != nil {
		h.t.Fatal(err)
	}
	h.d, h.c = d, c
	h.t.Cleanup(func() { h.stopWorkers(d, c) })
}

// stopWorkers cancels the events still running on d, and waits (a while)
// for their processes to be killed: units outlive their server by design,
// and a test leaves none behind.
func (h *harness) stopWorkers(d *daemon.Daemon, c client.Interface) {
	select {
	case <-d.Done():
		return
	default:
	}
	ctx := context.Background()
	l, err := c.List(ctx, api.KindEvent, "", api.ListOptions{})
	if err != nil {
		return
	}
	var ids []string
	for _, o := range l.Items {
		var ev api.Event
		if o.Into(&ev) != nil || ev.Status.Worker.Phase.Terminal() {
			continue
		}
		_, _ = c.Action(ctx, client.ActionRequest{Kind: api.KindEvent, Namespace: ev.Namespace, Name: ev.Name, Action: "cancel"})
		ids = append(ids, api.WorkerUnitID(ev.UID))
		for _, j := range ev.Status.Jobs {
			ids = append(ids, api.JobUnitID(ev.UID, j.Name))
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for exists(h.unitDir(id)+"/workspace") && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func (h *harness) project(name string, spec api.ProjectSpec) {
	h.t.Helper()
	if _, err := client.For[*api.Project](h.c).Create(context.Background(),
		&api.Project{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"}, Spec: spec}); err != nil {
		h.t.Fatal(err)
	}
}

// script is a project whose worker runs sh -c script.
func script(s string) api.ProjectSpec {
	return api.ProjectSpec{WorkerTemplate: api.WorkerSpec{Command: []string{"sh", "-c", s}}}
}

func (h *harness) do(method, path, token string, body any) (int, []byte) {
	h.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, h.d.URL()+api.BasePath+path, r)
	if err != nil {
		h.t.Fatal(err)
	}
	if token == "" {
		token = h.d.Token()
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := testkit.HTTPClient(h.t, h.d.ClientConfig()).Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (h *harness) create(project string) string {
	h.t.Helper()
	code, b := h.do("POST", "/namespaces/default/events", "", api.Event{Spec: api.EventSpec{Project: project, Source: "test", Type: "run"}})
	if code != http.StatusCreated {
		h.t.Fatalf("create event: %d %s", code, b)
	}
	var ev api.Event
	if err := json.Unmarshal(b, &ev); err != nil {
		h.t.Fatal(err)
	}
	return ev.Name
}

func (h *harness) get(name string) *api.Event {
	h.t.Helper()
	ev, err := client.For[*api.Event](h.c).Get(context.Background(), "default", name)
	if err != nil {
		h.t.Fatal(err)
	}
	return ev
}

// waitPhase waits until the event's worker is in phase, and returns it.
func (h *harness) waitPhase(name string, phase api.EventPhase) *api.Event {
	h.t.Helper()
	var ev *api.Event
	testkit.Eventually(h.t, wait, fmt.Sprintf("event %s %s", name, phase), func() bool {
		ev = h.get(name)
		return ev.Status.Worker.Phase == phase
	})
	return ev
}

func (h *harness) logs(name, job string) string {
	h.t.Helper()
	path := "/namespaces/default/events/" + name + "/logs"
	if job != "" {
		path += "?job=" + job
	}
	code, b := h.do("GET", path, "", nil)
	if code != 200 {
		h.t.Fatalf("logs: %d %s", code, b)
	}
	return string(b)
}

// unitDir is where the local runtime keeps a unit (see runtime/local),
// and its workspace, which a cleanup removes.
func (h *harness) unitDir(id string) string { return filepath.Join(h.rt, "units", id) }

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// phases records every worker phase an event takes, in store order, from a
// watch over every change.
type phases struct {
	mu     sync.Mutex
	byName map[string][]api.EventPhase
	// maxRunning is the most events STARTING or RUNNING at one revision.
	maxRunning int
	// starts lists the events in the order they were claimed.
	starts []string
	// maxJobs is the most jobs STARTING or RUNNING at one revision.
	maxJobs int
	// unfair lists the revisions at which a project ran more workers than
	// another one that had some waiting (projects are the names' prefixes).
	unfair []string
}

func (h *harness) record() *phases {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	w, err := h.c.Watch(ctx, api.KindEvent, "default", api.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	p := &phases{byName: map[string][]api.EventPhase{}}
	cur := map[string]api.EventPhase{}
	jobs := map[string]int{}
	go func() {
		for ev := range w.Events() {
			if ev.Object == nil || ev.Type == api.Bookmark {
				continue
			}
			var e api.Event
			if ev.Object.Into(&e) != nil {
				continue
			}
			ph := e.Status.Worker.Phase
			p.mu.Lock()
			jobs[e.Name] = 0
			for _, j := range e.Status.Jobs {
				if j.Phase == api.PhaseStarting || j.Phase == api.PhaseRunning {
					jobs[e.Name]++
				}
			}
			if ev.Type == api.Deleted {
				delete(cur, e.Name)
				delete(jobs, e.Name)
			} else if cur[e.Name] != ph {
				cur[e.Name] = ph
				p.byName[e.Name] = append(p.byName[e.Name], ph)
				if ph == api.PhaseStarting {
					p.starts = append(p.starts, e.Name)
				}
			}
			n := 0
			for _, q := range cur {
				if q == api.PhaseStarting || q == api.PhaseRunning {
					n++
				}
			}
			p.maxRunning = max(p.maxRunning, n)
			running, pending := map[string]int{}, map[string]int{}
			for name, q := range cur {
				prj, _, _ := strings.Cut(name, "-")
				switch q {
				case api.PhaseStarting, api.PhaseRunning:
					running[prj]++
				case api.PhasePending:
					pending[prj]++
				}
			}
			for x := range running {
				for y := range pending {
					// (the "gate" project holds the capacity on purpose: no preemption)
					if x != y && x != "gate" && running[x] > running[y]+1 {
						p.unfair = append(p.unfair, fmt.Sprintf("%s runs %d while %s runs %d and has %d waiting", x, running[x], y, running[y], pending[y]))
					}
				}
			}
			nj := 0
			for _, k := range jobs {
				nj += k
			}
			p.maxJobs = max(p.maxJobs, nj)
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *phases) unfairness() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.unfair...)
}

func (p *phases) snapshot() (maxRunning, maxJobs int, starts []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxRunning, p.maxJobs, append([]string(nil), p.starts...)
}

// trace is the text of the event's trace (GET .../trace).
func (h *harness) trace(name string) string {
	h.t.Helper()
	code, b := h.do("GET", "/namespaces/default/events/"+name+"/trace", "", nil)
	if code != 200 {
		h.t.Fatalf("trace: %d %s", code, b)
	}
	return string(b)
}

package scheduler_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/internal/testkit"
)

func TestCapacity_HeldExactlyUnderABurstOf200Events(t *testing.T) {
	if testing.Short() {
		t.Skip("200 real processes")
	}
	const capacity = 8
	h := startHarness(t, controllers.Config{EventMaxWorkers: capacity, EventGracePeriod: time.Second})
	rec := h.record()
	h.project("burst", script("sleep 0.1"))
	var names []string
	for range 200 {
		names = append(names, h.create("burst"))
	}
	// A bound on liveness, not a measure of speed (BenchmarkEvents is
	// that): 200 workers under -race on a loaded 2-core machine take
	// from about 100 s alone to over 200 s beside other packages' tests.
	testkit.Eventually(t, 420*time.Second, "200 events SUCCEEDED", func() bool {
		l, err := h.c.List(t.Context(), api.KindEvent, "default", api.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, o := range l.Items {
			var ev api.Event
			if o.Into(&ev) == nil && ev.Status.Worker.Phase == api.PhaseSucceeded {
				done++
			}
		}
		return done == len(names)
	})
	maxRunning, _, starts := rec.snapshot()
	if maxRunning != capacity {
		t.Fatalf("at most %d workers ran at once, want exactly the capacity %d", maxRunning, capacity)
	}
	if len(starts) != len(names) {
		t.Fatalf("%d claims for %d events: a worker was claimed twice or never", len(starts), len(names))
	}
}

func TestFairness_TwoProjectsShareTheCapacity(t *testing.T) {
	h := startHarness(t, controllers.Config{EventMaxWorkers: 2, EventGracePeriod: time.Second})
	rec := h.record()
	h.project("a", script("sleep 0.3"))
	h.project("b", script("sleep 0.3"))
	gate := t.TempDir() + "/open"
	h.project("gate", script("while [ ! -f "+gate+" ]; do sleep 0.1; done"))
	gates := []string{h.create("gate"), h.create("gate")}
	for _, g := range gates {
		h.waitPhase(g, api.PhaseRunning) // the capacity is full until the gate opens
	}
	created := map[string][]string{}
	// Every event of a is older than every event of b: FIFO across projects
	// would run all of a first.
	for _, p := range []string{"a", "a", "a", "a", "a", "a", "b", "b", "b", "b", "b", "b"} {
		created[p] = append(created[p], h.create(p))
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range append(created["a"], created["b"]...) {
		h.waitPhase(n, api.PhaseSucceeded)
	}
	maxRunning, _, starts := rec.snapshot()
	starts = starts[len(gates):]
	if maxRunning > 2 {
		t.Fatalf("%d workers ran at once, capacity 2", maxRunning)
	}
	project := func(name string) string { p, _, _ := strings.Cut(name, "-"); return p }
	if first := []string{project(starts[0]), project(starts[1])}; first[0] == first[1] {
		t.Fatalf("the first two starts once the capacity freed are both project %s's: want one of each", first[0])
	}
	if u := rec.unfairness(); len(u) > 0 {
		t.Fatalf("unfair: %v", u)
	}
	for _, p := range []string{"a", "b"} {
		var order []string
		for _, n := range starts {
			if project(n) == p {
				order = append(order, n)
			}
		}
		if fmt.Sprint(order) != fmt.Sprint(created[p]) {
			t.Fatalf("project %s started %v, want FIFO %v", p, order, created[p])
		}
	}
}

func TestJobs_RunWithinTheProjectsJobCapacity(t *testing.T) {
	h := startHarness(t, controllers.Config{EventGracePeriod: time.Second})
	rec := h.record()
	spec := script(`set -eu
for j in one two three; do
  curl -fsS --cacert "$CAIRN_CA_FILE" -H "Authorization: Bearer $CAIRN_TOKEN" -o /dev/null \
    -d '{"name":"'$j'","spec":{"command":["sh","-c","echo job $CAIRN_JOB; sleep 0.3"]}}' \
    "$CAIRN_SERVER/apis/cairn.dev/v1alpha1/namespaces/$CAIRN_NAMESPACE/events/$CAIRN_EVENT/jobs"
done
sleep 300`)
	spec.MaxConcurrentJobs = 1
	h.project("jobs", spec)
	name := h.create("jobs")
	testkit.Eventually(t, wait, "three jobs SUCCEEDED", func() bool {
		return h.get(name).Status.JobPhases == "one:SUCCEEDED,two:SUCCEEDED,three:SUCCEEDED"
	})
	if _, maxJobs, _ := rec.snapshot(); maxJobs != 1 {
		t.Fatalf("%d jobs ran at once, the project allows 1", maxJobs)
	}
	if got := h.logs(name, "two"); got != "job two\n" {
		t.Fatalf("job logs %q", got)
	}
	if code, b := h.do("POST", "/namespaces/default/events/"+name+"/cancel", "", nil); code != 200 {
		t.Fatalf("cancel: %d %s", code, b)
	}
	h.waitPhase(name, api.PhaseAborted)
}

func TestRestart_NeverLosesNorDoubleStartsAWorker(t *testing.T) {
	h := startHarness(t, controllers.Config{EventMaxWorkers: 2, EventGracePeriod: time.Second})
	runs := testkit.UnitWritableDir(t) + "/runs"
	// Each worker runs as a uid of its own: the file they all append to is
	// open to all.
	if err := os.WriteFile(runs, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(runs, 0o666); err != nil {
		t.Fatal(err)
	}
	h.project("once", script(`echo "$CAIRN_EVENT" >> `+runs+`; sleep 2`))
	var names []string
	for range 4 {
		names = append(names, h.create("once"))
	}
	testkit.Eventually(t, wait, "two workers running", func() bool {
		n := 0
		for _, name := range names {
			if h.get(name).Status.Worker.Phase == api.PhaseRunning {
				n++
			}
		}
		return n == 2
	})
	if err := h.d.Stop(); err != nil {
		t.Fatal(err)
	}
	h.start() // the same data dir: the store, and the runtime whose units outlived the server
	for _, name := range names {
		h.waitPhase(name, api.PhaseSucceeded)
	}
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	if len(lines) != len(names) {
		t.Fatalf("workers ran %d times for %d events: %v", len(lines), len(names), lines)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l] {
			t.Fatalf("worker of %s ran twice", l)
		}
		seen[l] = true
	}
}

func TestExplain_SaysWhyAnEventWaitsAndHowItEnded(t *testing.T) {
	h := startHarness(t, controllers.Config{EventMaxWorkers: 1, EventGracePeriod: time.Second})
	h.project("long", script("sleep 300"))
	spec := script("sleep 300")
	spec.WorkerTemplate.Timeout = &api.Duration{Duration: time.Second}
	h.project("short", spec)
	h.project("missing", api.ProjectSpec{WorkerTemplate: api.WorkerSpec{Command: []string{"no-such-command-cairn"}}})
	first := h.create("long")
	h.waitPhase(first, api.PhaseRunning)
	second, third := h.create("long"), h.create("long")
	testkit.Eventually(t, wait, "the trace of the third event to say why it waits", func() bool {
		return strings.Contains(h.trace(third), "waiting for capacity: the global limit (1 of 1 running); place 2 of 2 in its project's queue")
	})
	if tr := h.trace(first); !strings.Contains(tr, "started its unit") {
		t.Fatalf("trace of the running event does not say it started:\n%s", tr)
	}
	for _, n := range []string{first, second, third} {
		if code, b := h.do("POST", "/namespaces/default/events/"+n+"/cancel", "", nil); code != 200 {
			t.Fatalf("cancel: %d %s", code, b)
		}
	}
	timed := h.create("short")
	h.waitPhase(timed, api.PhaseTimedOut)
	testkit.Eventually(t, wait, "the trace to say it timed out", func() bool { return strings.Contains(h.trace(timed), "timeout passed") })
	failed := h.create("missing")
	h.waitPhase(failed, api.PhaseFailed)
	if tr := h.trace(failed); !strings.Contains(tr, `failed to start: command \"no-such-command-cairn\" not found in PATH`) {
		t.Fatalf("trace of the failed event does not say why it did not start:\n%s", tr)
	}
}

package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// The soak's checks: what the runtime started, whether everything
// converged, and the invariants over the ledger.

// unitRecords are the starts the local runtime recorded: for each unit id
// the distinct proc.json files (the supervisor writes one when it starts
// the unit's command) seen under <runtime>/units/<id>/. Units are removed
// with their owners, so the directory is polled while the soak runs. It is
// safe for concurrent use.
type unitRecords struct {
	root string
	mu   sync.Mutex
	seen map[string]map[string]bool // unit id → proc.json contents
}

func newUnitRecords(root string) *unitRecords {
	return &unitRecords{root: root, seen: map[string]map[string]bool{}}
}

// poll scans every interval until ctx ends. It blocks.
func (u *unitRecords) poll(ctx context.Context, interval time.Duration) {
	for {
		u.scan()
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// scan reads the proc.json of every unit present now.
func (u *unitRecords) scan() {
	dirs, _ := os.ReadDir(filepath.Join(u.root, "units"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(u.root, "units", d.Name(), "proc.json"))
		if err != nil || len(b) == 0 {
			continue
		}
		u.mu.Lock()
		if u.seen[d.Name()] == nil {
			u.seen[d.Name()] = map[string]bool{}
		}
		u.seen[d.Name()][strings.TrimSpace(string(b))] = true
		u.mu.Unlock()
	}
}

// twice returns the problems in the runtime's records: a unit id whose
// command was started more than once, and a deploy item generation run
// under more than one unit id (di-<uid>-<gen>-<time>), or uninstalled
// more than once (di-<uid>-delete-<time>); and the number of units seen.
func (u *unitRecords) twice() ([]string, int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	runs := map[string][]string{} // item uid and generation (or "delete") → unit ids
	for id, procs := range u.seen {
		if len(procs) > 1 {
			out = append(out, fmt.Sprintf("runtime: unit %s was started %d times", id, len(procs)))
		}
		if run, ok := itemRun(id); ok {
			runs[run] = append(runs[run], id)
		}
	}
	for run, ids := range runs {
		if len(ids) > 1 {
			slices.Sort(ids)
			out = append(out, fmt.Sprintf("runtime: deploy item run %s started under %d unit ids: %v", run, len(ids), ids))
		}
	}
	sort.Strings(out)
	return out, len(u.seen)
}

// itemRun is the deploy item uid and generation (or "delete") a
// container run's unit id stands for; false for other units.
func itemRun(id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, "di-")
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return "", false
	}
	return rest[:i], true // "<uid>-<gen>" or "<uid>-delete"
}

// startsTwice reads the start log the units append to ("worker ns/ev",
// "job ns/ev/j", "run ns/inst", "uninstall ns/inst") and returns the lines
// found more than once, and how many starts of each sort there were.
func startsTwice(path string) ([]string, map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	count := map[string]int{}
	sorts := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		count[line]++
		sort, _, _ := strings.Cut(line, " ")
		sorts[sort]++
	}
	var out []string
	for line, n := range count {
		if n > 1 {
			out = append(out, fmt.Sprintf("units: %q started %d times", line, n))
		}
	}
	sort.Strings(out)
	return out, sorts, sc.Err()
}

// soakKinds are the kinds the final checks read.
var soakKinds = []string{api.KindNamespace, api.KindSecret, api.KindProject, api.KindEvent, api.KindInstallation,
	api.KindExecution, api.KindDeployItem, api.KindDataObject, api.KindCleaner}

// snapshot is every object of soakKinds, by uid.
func snapshot(c client.Interface) (map[string]*api.Object, error) {
	out := map[string]*api.Object{}
	for _, kind := range soakKinds {
		l, err := c.List(context.Background(), kind, "", api.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list %ss: %w", kind, err)
		}
		for _, o := range l.Items {
			if o.Kind == "" {
				o.Kind = kind
			}
			out[o.UID] = o
		}
	}
	return out, nil
}

// unconverged returns what keeps the objects from having converged: an
// installation not in the phase its spec leads to, an event not
// SUCCEEDED, an object being deleted, a Cleaner left (every soak Cleaner
// deletes itself within a minute), an object whose namespace or owners
// are all gone.
func unconverged(objs map[string]*api.Object) []string {
	var out []string
	spaces := map[string]bool{}
	for _, o := range objs {
		if o.Kind == api.KindNamespace {
			spaces[o.Name] = true
		}
	}
	for _, o := range objs {
		k := objectKey{o.Kind, o.Namespace, o.Name, o.UID}
		if o.DeletionTimestamp != nil {
			out = append(out, fmt.Sprintf("stuck deleting since %s: %s (finalizers %v)", o.DeletionTimestamp.Format(time.RFC3339), k, o.Finalizers))
		}
		if o.Namespace != "" && !spaces[o.Namespace] {
			out = append(out, fmt.Sprintf("orphan: %s, its namespace is gone", k))
		}
		if len(o.OwnerReferences) > 0 && !slices.ContainsFunc(o.OwnerReferences, func(r api.OwnerReference) bool { return objs[r.UID] != nil }) {
			out = append(out, fmt.Sprintf("orphan: %s, its owners %v are gone", k, o.OwnerReferences))
		}
		out = append(out, phaseProblem(o, k)...)
	}
	sort.Strings(out)
	return out
}

// phaseProblem says how an installation, event or Cleaner has not
// converged.
func phaseProblem(o *api.Object, k objectKey) []string {
	switch o.Kind {
	case api.KindInstallation:
		var inst api.Installation
		_ = o.Into(&inst)
		want := expectedPhase(o)
		if want == "" {
			want = string(api.InstallationSucceeded)
		}
		if string(inst.Status.Phase) != want || inst.Status.ObservedGeneration != inst.Generation {
			return []string{fmt.Sprintf("not converged: %s is %s (generation %d observed %d, want %s): %+v",
				k, inst.Status.Phase, inst.Generation, inst.Status.ObservedGeneration, want, inst.Status.LastError)}
		}
	case api.KindEvent:
		var ev api.Event
		_ = o.Into(&ev)
		if w := ev.Status.Worker; w.Phase != api.PhaseSucceeded {
			return []string{fmt.Sprintf("not converged: %s worker is %s (%s), jobs %s", k, w.Phase, w.Reason, ev.Status.JobPhases)}
		}
	case api.KindCleaner:
		return []string{fmt.Sprintf("not converged: %s is still there (phase %v)", k, o.Lookup("status.phase"))}
	}
	return nil
}

// awaitSoakConverged waits, at most bound, until nothing keeps the objects
// from having converged, and returns what still did at the bound.
func awaitSoakConverged(t *testing.T, c client.Interface, bound time.Duration) []string {
	t.Helper()
	t0 := time.Now()
	var last []string
	for time.Since(t0) < bound {
		objs, err := snapshot(c)
		if err == nil {
			if last = unconverged(objs); len(last) == 0 {
				t.Logf("converged %s after the last restart", time.Since(t0).Round(time.Millisecond))
				return nil
			}
		} else {
			last = []string{err.Error()}
		}
		time.Sleep(2 * time.Second)
	}
	return last
}

// soakReport is the outcome: the figures and the problems found.
type soakReport struct {
	elapsed  time.Duration
	restarts []restartFigures
	byOp     map[string]int
	acked    int
	failed   int
	p50, p99 float64
	starts   map[string]int
	units    int
	objects  map[string]int // kind → objects at the end
	refused  []string       // restarts the server refused at first
	warnings map[string]int // WARN and ERROR lines of the server logs, by message
	problems []string
}

// checkSoak checks the invariants over the ledger and the final state.
func checkSoak(t *testing.T, c client.Interface, led *ledger, runs *unitRecords, startLog string) *soakReport {
	t.Helper()
	r := &soakReport{objects: map[string]int{}}
	led.mu.Lock()
	r.byOp, r.acked, r.failed = led.byOp, len(led.acks), led.failed
	lat := slices.Clone(led.lat)
	acks := slices.Clone(led.acks)
	led.mu.Unlock()
	slices.Sort(lat)
	r.p50, r.p99 = percentile(lat, 50), percentile(lat, 99)

	objs, err := snapshot(c)
	if err != nil {
		r.problems = append(r.problems, err.Error())
		return r
	}
	for _, o := range objs {
		r.objects[o.Kind]++
	}
	r.problems = append(r.problems, lostWrites(acks, objs)...)
	twice, n := runs.twice()
	r.units = n
	r.problems = append(r.problems, twice...)
	twice, sorts, err := startsTwice(startLog)
	if err != nil {
		r.problems = append(r.problems, err.Error())
	}
	r.starts = sorts
	r.problems = append(r.problems, twice...)
	return r
}

// lostWrites checks every acknowledged create: the object is there (with
// the last acknowledged touch and at least the last acknowledged
// resourceVersion), or an acknowledged write explains its absence: a
// delete of it, the deletion of its namespace (or one that failed
// without an answer, which may have happened), a Cleaner deleting it (or,
// for a Cleaner, itself once its TTL passed).
func lostWrites(acks []ack, objs map[string]*api.Object) []string {
	deleted := map[string]bool{}   // uid
	nsDeleted := map[string]bool{} // namespace name
	cleaned := map[string]bool{}   // ns/installation
	lastTouch := map[string]ack{}  // uid
	for _, a := range acks {
		switch {
		case strings.HasPrefix(a.op, "delete") && a.key.kind == api.KindNamespace:
			nsDeleted[a.key.name] = true
			deleted[a.key.uid] = true
		case strings.HasPrefix(a.op, "delete"):
			deleted[a.key.uid] = true
		case strings.HasPrefix(a.op, "create") && a.target != "":
			cleaned[a.key.ns+"/"+a.target] = true
		case a.op == "touch":
			lastTouch[a.key.uid] = a
		}
	}
	var out []string
	for _, a := range acks {
		if a.op != "create" {
			continue
		}
		o := objs[a.key.uid]
		if o == nil {
			explained := deleted[a.key.uid] || nsDeleted[a.key.ns] || a.key.kind == api.KindCleaner ||
				(a.key.kind == api.KindInstallation && cleaned[a.key.ns+"/"+a.key.name])
			if !explained {
				out = append(out, fmt.Sprintf("lost: %s, created (resourceVersion %s) at %s, is gone and no acknowledged write deleted it",
					a.key, a.rv, a.at.Format(time.RFC3339)))
			}
			continue
		}
		last := a
		if t, ok := lastTouch[a.key.uid]; ok {
			last = t
			if got, _ := strconv.Atoi(o.Annotations[soakTouch]); got < t.touch {
				out = append(out, fmt.Sprintf("lost: %s has %s=%d, but %d was acknowledged at %s",
					a.key, soakTouch, got, t.touch, t.at.Format(time.RFC3339)))
			}
		}
		if rvLess(o.ResourceVersion, last.rv) {
			out = append(out, fmt.Sprintf("lost: %s is at resourceVersion %s, before the acknowledged %s", a.key, o.ResourceVersion, last.rv))
		}
	}
	return out
}

// rvLess compares resourceVersions as the etcd revisions they are.
func rvLess(a, b string) bool {
	x, errX := strconv.ParseInt(a, 10, 64)
	y, errY := strconv.ParseInt(b, 10, 64)
	return errX == nil && errY == nil && x < y
}

// summary is the report's figures, one line each.
func (r *soakReport) summary() []string {
	ops := 0
	for _, n := range r.byOp {
		ops += n
	}
	out := []string{
		fmt.Sprintf("soak: %s, %d restarts (kill -9), %d requests %v: %d acknowledged writes, %d failed requests",
			r.elapsed.Round(time.Second), len(r.restarts), ops, r.byOp, r.acked, r.failed),
		fmt.Sprintf("latency of the acknowledged requests: p50 %.1f ms, p99 %.1f ms", r.p50, r.p99),
		fmt.Sprintf("unit starts (from the units' own log) %v; runtime units seen %d", r.starts, r.units),
		fmt.Sprintf("objects at the end: %v", r.objects),
	}
	for i, f := range r.restarts {
		out = append(out, fmt.Sprintf("restart %d at %s: down %s, %d in flight converged %s after (timed out: %v)",
			i+1, f.at.Round(time.Second), f.down.Round(time.Millisecond), f.inFlight, f.converge.Round(time.Millisecond), f.timedOut))
	}
	for _, s := range r.refused {
		out = append(out, "start refused: "+s)
	}
	out = append(out, fmt.Sprintf("server log warnings and errors by message: %v", r.warnings))
	out = append(out, fmt.Sprintf("invariants: %d problems", len(r.problems)))
	return out
}

package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

// The soak's clients: what they do and the ledger of what the server
// acknowledged.

// Labels and annotations the soak puts on its objects.
const (
	// soakExpect on an installation names the phase its spec leads to.
	soakExpect = "soak.cairn.dev/expect"
	// soakTouch is an annotation the clients keep raising on
	// installations: the last acknowledged value must survive.
	soakTouch = "soak.cairn.dev/touch"
)

// soakNamespaces are the standing namespaces, each with a project.
var soakNamespaces = []string{"soak-a", "soak-b"}

// ack is one write the server acknowledged (2xx).
type ack struct {
	// op is create, delete or touch; "create?" and "delete?" are
	// requests that failed but may have taken effect (no answer).
	op    string
	key   objectKey
	rv    string // the resourceVersion of the answer (create, touch)
	touch int    // the annotation's value (touch)
	at    time.Time
	ttl   time.Duration // a Cleaner's
	// target is the installation a Cleaner deletes.
	target string
}

// ledger records every acknowledged write, the latency of every request
// and the requests that failed. It is safe for concurrent use.
type ledger struct {
	mu     sync.Mutex
	acks   []ack
	lat    []time.Duration
	failed int
	byOp   map[string]int
}

// do runs one request, timing it, and records it as acknowledged when it
// returns no error (with the answer's object, nil for some deletes).
func (l *ledger) do(op string, f func() (*api.Object, error)) (*api.Object, error) {
	t0 := time.Now()
	obj, err := f()
	took := time.Since(t0)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byOp == nil {
		l.byOp = map[string]int{}
	}
	l.byOp[op]++
	if err != nil {
		l.failed++
		return nil, err
	}
	l.lat = append(l.lat, took)
	return obj, nil
}

// record adds an acknowledged write.
func (l *ledger) record(a ack) {
	a.at = time.Now()
	l.mu.Lock()
	l.acks = append(l.acks, a)
	l.mu.Unlock()
}

// tracked is an object the clients created and may act on later.
type tracked struct {
	key     objectKey
	created time.Time
	cleaned bool // a Cleaner targets it
	gone    bool // the clients deleted it (or its namespace)
}

// soakWork is the clients' work.
type soakWork struct {
	t        *testing.T
	c        client.Interface
	led      *ledger
	startLog string

	mu       sync.Mutex
	n        int // names objects
	installs []*tracked
	events   []*tracked
	spaces   []*tracked // namespaces created to be deleted
}

// newSoakWork creates the standing namespaces, each with a Secret and a
// project "work" whose worker creates two jobs and waits for them.
func newSoakWork(t *testing.T, c client.Interface, led *ledger, startLog string) *soakWork {
	t.Helper()
	w := &soakWork{t: t, c: c, led: led, startLog: startLog}
	ctx := context.Background()
	for _, ns := range soakNamespaces {
		project := &api.Project{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindProject}, ObjectMeta: api.ObjectMeta{Name: "work", Namespace: ns},
			Spec: api.ProjectSpec{Secrets: []string{"creds"}, MaxConcurrentWorkers: 3, MaxConcurrentJobs: 4,
				WorkerTemplate: api.WorkerSpec{Command: []string{"sh", "-c", w.workerScript()}, Timeout: &api.Duration{Duration: 5 * time.Minute}}}}
		po, err := api.FromResource(project)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range []*api.Object{testkit.Object(api.KindNamespace, "", ns),
			testkit.Secret(ns, "creds", map[string]string{"password": "soak"}), po} {
			out, err := w.c.Create(ctx, o)
			if err != nil {
				t.Fatalf("setup: %v", err)
			}
			led.record(ack{op: "create", key: objectKey{out.Kind, out.Namespace, out.Name, out.UID}, rv: out.ResourceVersion})
		}
	}
	return w
}

// workerScript is the workers' command: it records its start, creates
// jobs a and b (each records its start and sleeps 2 s), retrying while the
// server is away (409: created already), and waits for both (at most some
// 600 tries in all).
func (w *soakWork) workerScript() string {
	job := `{"name":"'$job'","spec":{"command":["sh","-c","echo job $CAIRN_NAMESPACE/$CAIRN_EVENT/$CAIRN_JOB >> ` + w.startLog + `; sleep 2"]}}`
	return `set -u
echo "worker $CAIRN_NAMESPACE/$CAIRN_EVENT" >> ` + w.startLog + `
if [ -n "${CAIRN_CA_FILE:-}" ]; then export CURL_CA_BUNDLE="$CAIRN_CA_FILE"; fi
api="$CAIRN_SERVER/apis/cairn.dev/v1alpha1/namespaces/$CAIRN_NAMESPACE/events/$CAIRN_EVENT"
auth="Authorization: Bearer $CAIRN_TOKEN"
tries=0 # bounded: a worker whose server is gone for good gives up after some 10 minutes
for job in a b; do
  while [ $((tries += 1)) -lt 600 ]; do
    code=$(curl -sS -o /dev/null -w '%{http_code}' -H "$auth" -H 'Content-Type: application/json' -d '` + job + `' "$api/jobs")
    case "$code" in 201|409) break ;; esac
    sleep 1
  done
done
while [ $((tries += 1)) -lt 600 ]; do
  event=$(curl -fsS -H "$auth" "$api") || { sleep 1; continue; }
  case "$event" in *'"phase":"FAILED"'*) echo "a job failed"; exit 1 ;; esac
  n=$(printf '%s' "$event" | grep -o '"phase":"SUCCEEDED"' | wc -l)
  if [ "$n" -ge 2 ]; then exit 0; fi
  sleep 1
done
exit 2
`
}

// run starts the clients; each stops when ctx ends.
func (w *soakWork) run(ctx context.Context, wg *sync.WaitGroup) {
	every := func(from, to time.Duration, f func()) {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(from + time.Duration(rand.Int64N(int64(to-from)))):
				}
				f()
			}
		})
	}
	for _, ns := range soakNamespaces {
		every(2*time.Second, 4*time.Second, func() { w.newEvent(ctx, ns) })
		every(2*time.Second, 4*time.Second, func() { w.newInstallation(ctx, ns) })
	}
	every(2*time.Second, 4*time.Second, func() { w.deleteSome(ctx) })
	every(time.Second, 3*time.Second, func() { w.touchOne(ctx) })
	every(15*time.Second, 25*time.Second, func() { w.churnNamespace(ctx) })
}

// name returns a new name with prefix.
func (w *soakWork) name(prefix string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	return fmt.Sprintf("%s-%d", prefix, w.n)
}

// create creates obj and records it when acknowledged; it returns whether
// it was. Every request is bounded by 30 s.
func (w *soakWork) create(ctx context.Context, obj *api.Object) bool {
	_, ok := w.createAck(ctx, obj, ack{op: "create"})
	return ok
}

// createAck is create with more to record (a Cleaner's TTL and target);
// it returns the created object's key.
func (w *soakWork) createAck(ctx context.Context, obj *api.Object, a ack) (objectKey, bool) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := w.led.do("create", func() (*api.Object, error) { return w.c.Create(rctx, obj) })
	if err != nil {
		if a.target != "" { // the Cleaner may exist
			a.op, a.key = "create?", objectKey{kind: obj.Kind, ns: obj.Namespace, name: obj.Name}
			w.led.record(a)
		}
		return objectKey{}, false
	}
	a.key = objectKey{out.Kind, out.Namespace, out.Name, out.UID}
	a.rv = out.ResourceVersion
	w.led.record(a)
	return a.key, true
}

// newEvent creates an event for the project of ns.
func (w *soakWork) newEvent(ctx context.Context, ns string) {
	spec, _ := json.Marshal(api.EventSpec{Project: "work", Source: "soak", Type: "run"})
	obj := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindEvent},
		ObjectMeta: api.ObjectMeta{Namespace: ns, GenerateName: "ev-"}, Fields: map[string]json.RawMessage{"spec": spec}}
	if k, ok := w.createAck(ctx, obj, ack{op: "create"}); ok {
		w.mu.Lock()
		w.events = append(w.events, &tracked{key: k, created: time.Now()})
		w.mu.Unlock()
	}
}

// newInstallation creates an installation in ns whose blueprint renders a
// mock item and a container item after it (one in ten: the mock item
// fails, and so does the installation); four in ten get a Cleaner with a
// TTL of 10 to 60 s that deletes them.
func (w *soakWork) newInstallation(ctx context.Context, ns string) {
	name := w.name("inst")
	obj := w.installation(ns, name, rand.IntN(10) == 0)
	k, ok := w.createAck(ctx, obj, ack{op: "create"})
	if !ok {
		return
	}
	tr := &tracked{key: k, created: time.Now()}
	if rand.IntN(10) < 4 {
		ttl := 10*time.Second + time.Duration(rand.Int64N(int64(50*time.Second)))
		tr.cleaned = true // from now on: an unacknowledged Cleaner may exist
		_, _ = w.createAck(ctx, soakCleaner(ns, "cl-"+name, name, ttl), ack{op: "create", ttl: ttl, target: name})
	}
	w.mu.Lock()
	w.installs = append(w.installs, tr)
	w.mu.Unlock()
}

// installation builds the installation ns/name.
func (w *soakWork) installation(ns, name string, fail bool) *api.Object {
	phase := api.InstallationSucceeded
	if fail {
		phase = api.InstallationFailed
	}
	tmpl := fmt.Sprintf(`deployItems:
- name: a
  type: mock
  config: {phase: %s, delay: 1s}
- name: b
  type: container
  dependsOn: [a]
  config:
    command: ["sh", "-c", "echo run %s/%s >> %s"]
    deleteCommand: ["sh", "-c", "echo uninstall %s/%s >> %s"]
`, phase, ns, name, w.startLog, ns, name, w.startLog)
	obj, err := api.FromResource(&api.Installation{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindInstallation},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{soakExpect: string(phase)},
			Annotations: map[string]string{soakTouch: "0"}},
		Spec: api.InstallationSpec{Blueprint: api.BlueprintReference{Inline: &api.BlueprintSpec{
			DeployExecutions: []api.TemplateExecutor{{Name: "items", Type: api.TemplateGo, Template: tmpl}}}}},
	})
	if err != nil {
		w.t.Error(err)
	}
	return obj
}

// soakCleaner builds a Cleaner that deletes installation target ttl after its
// creation, its condition always true.
func soakCleaner(ns, name, target string, ttl time.Duration) *api.Object {
	obj, _ := api.FromResource(&api.Cleaner{
		TypeMeta:   api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindCleaner},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: ns},
		Spec: api.CleanerSpec{TTL: api.Duration{Duration: ttl}, Retry: api.CleanerRetry{Period: api.Duration{Duration: 10 * time.Second}},
			Targets:    []api.CleanerTarget{{Name: "inst", Reference: api.TargetReference{Kind: api.KindInstallation, Name: target}, Delete: true}},
			Conditions: []string{"true"}},
	})
	return obj
}

// deleteSome deletes one installation older than 15 s that no Cleaner
// targets and one event older than 40 s, each with its uid as
// precondition.
func (w *soakWork) deleteSome(ctx context.Context) {
	if tr := w.pick(w.installs, 15*time.Second, false); tr != nil {
		w.delete(ctx, tr)
	}
	if tr := w.pick(w.events, 40*time.Second, false); tr != nil {
		w.delete(ctx, tr)
	}
}

// pick chooses a random tracked object older than age, not gone and, unless
// cleaned, not targeted by a Cleaner.
func (w *soakWork) pick(from []*tracked, age time.Duration, cleaned bool) *tracked {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ok []*tracked
	for _, tr := range from {
		if !tr.gone && (cleaned || !tr.cleaned) && time.Since(tr.created) > age {
			ok = append(ok, tr)
		}
	}
	if len(ok) == 0 {
		return nil
	}
	return ok[rand.IntN(len(ok))]
}

// delete deletes tr (by uid), recording the acknowledgement.
func (w *soakWork) delete(ctx context.Context, tr *tracked) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	k := tr.key
	_, err := w.led.do("delete", func() (*api.Object, error) {
		o, _, err := w.c.Delete(rctx, k.kind, k.ns, k.name, api.DeleteOptions{Preconditions: api.Preconditions{UID: k.uid}})
		return o, err
	})
	if err == nil || errors.Is(err, api.ErrNotFound) {
		w.mu.Lock()
		tr.gone = true
		w.mu.Unlock()
	}
	switch {
	case err == nil:
		w.led.record(ack{op: "delete", key: k})
	case !errors.Is(err, api.ErrNotFound):
		w.led.record(ack{op: "delete?", key: k}) // it may have happened
	}
}

// touchOne raises the touch annotation of a random installation.
func (w *soakWork) touchOne(ctx context.Context) {
	tr := w.pick(w.installs, 0, true)
	if tr == nil {
		return
	}
	w.mu.Lock()
	w.n++
	n := w.n
	w.mu.Unlock()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"%d"}}}`, soakTouch, n)
	out, err := w.led.do("touch", func() (*api.Object, error) {
		return w.c.Patch(rctx, tr.key.kind, tr.key.ns, tr.key.name, patch, false)
	})
	if err == nil && out.UID == tr.key.uid {
		w.led.record(ack{op: "touch", key: tr.key, rv: out.ResourceVersion, touch: n})
	}
}

// churnNamespace creates a namespace with a Secret and an installation in
// it, and deletes one such namespace older than 30 s.
func (w *soakWork) churnNamespace(ctx context.Context) {
	if tr := w.pick(w.spaces, 30*time.Second, false); tr != nil {
		w.delete(ctx, tr)
	}
	ns := w.name("tmp")
	k, ok := w.createAck(ctx, testkit.Object(api.KindNamespace, "", ns), ack{op: "create"})
	if !ok {
		return
	}
	w.mu.Lock()
	w.spaces = append(w.spaces, &tracked{key: k, created: time.Now()})
	w.mu.Unlock()
	w.create(ctx, testkit.Secret(ns, "s", map[string]string{"k": "v"}))
	w.create(ctx, w.installation(ns, "inst", false))
}

// expectedPhase is the phase an installation's spec leads to.
func expectedPhase(o *api.Object) string {
	return strings.TrimSpace(o.Labels[soakExpect])
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
)

// The soak: a `cairn server` process (the binary) on one data dir, killed
// with SIGKILL every few minutes and started again on the same data dir,
// while several clients keep working against it (events whose workers
// create jobs, installations with mock and container deploy items,
// Cleaners with TTLs, deletes of installations, events and namespaces,
// metadata updates). Every write the server acknowledged is recorded; at
// the end, after a last kill and restart once the work has stopped, the
// invariants are checked: no acknowledged write lost, no unit started
// twice, every object converged. Run it with
//
//	CAIRN_SOAK=30m nice -n 10 go test ./bench -run TestSoak -timeout 60m -v
//
// CAIRN_SOAK_RESTARTS=1m-4m (the default) is the range the time between
// two kills is drawn from, uniformly. Without CAIRN_SOAK the test is
// skipped: it is not part of the ordinary test run.

// soakConfig is what the environment asks of the soak.
type soakConfig struct {
	duration     time.Duration // how long the clients work
	restartsFrom time.Duration // the shortest time between two kills
	restartsTo   time.Duration // the longest
}

// soakSettings reads CAIRN_SOAK and CAIRN_SOAK_RESTARTS, skipping the test
// when CAIRN_SOAK is unset and failing it on values that do not parse.
func soakSettings(t *testing.T) soakConfig {
	t.Helper()
	v := os.Getenv("CAIRN_SOAK")
	if v == "" {
		t.Skip("the soak runs only when CAIRN_SOAK names its duration, e.g. CAIRN_SOAK=30m go test ./bench -run TestSoak -timeout 60m")
	}
	cfg := soakConfig{restartsFrom: time.Minute, restartsTo: 4 * time.Minute}
	var err error
	if cfg.duration, err = time.ParseDuration(v); err != nil || cfg.duration <= 0 {
		t.Fatalf("CAIRN_SOAK=%q: want a positive Go duration such as 30m", v)
	}
	if r := os.Getenv("CAIRN_SOAK_RESTARTS"); r != "" {
		from, to, ok := strings.Cut(r, "-")
		a, errA := time.ParseDuration(from)
		b, errB := time.ParseDuration(to)
		if !ok || errA != nil || errB != nil || a <= 0 || b < a {
			t.Fatalf("CAIRN_SOAK_RESTARTS=%q: want a range of Go durations MIN-MAX such as 1m-4m", r)
		}
		cfg.restartsFrom, cfg.restartsTo = a, b
	}
	return cfg
}

// TestSoak is the soak described above.
func TestSoak(t *testing.T) {
	cfg := soakSettings(t)
	s := newSoakServer(t)
	s.start(t)
	c := s.client(t)
	led := &ledger{}
	w := newSoakWork(t, c, led, s.startLog)

	ctx, stopWork := context.WithTimeout(context.Background(), cfg.duration)
	defer stopWork()
	pollCtx, stopPoll := context.WithCancel(context.Background())
	defer stopPoll()
	runs := newUnitRecords(s.runtimeDir)
	pollDone := make(chan struct{})
	go func() { defer close(pollDone); runs.poll(pollCtx, 500*time.Millisecond) }()

	began := time.Now()
	var wg sync.WaitGroup
	w.run(ctx, &wg)
	restarts := s.killLoop(ctx, t, c, cfg)
	wg.Wait()
	t.Logf("work stopped after %s: %d restarts", time.Since(began).Round(time.Second), len(restarts))

	// The last restart, once the work has stopped; then everything must
	// converge.
	inFlight := unfinished(c)
	final := s.restart(t, c, began)
	final.inFlight = len(inFlight)
	settle := time.Now()
	problems := awaitSoakConverged(t, c, 10*time.Minute)
	final.converge = time.Since(settle)
	restarts = append(restarts, final)
	stopPoll()
	<-pollDone
	runs.scan()

	r := checkSoak(t, c, led, runs, s.startLog)
	r.problems = append(problems, r.problems...)
	r.restarts = restarts
	r.elapsed = time.Since(began)
	r.refused = s.refused
	r.warnings = logWarnings(s.dir)
	for _, line := range r.summary() {
		t.Log(line)
	}
	for _, p := range r.problems {
		t.Error(p)
	}
}

// soakServer is the `cairn server` process of the soak, on a fixed port
// and data dir so that it comes back where the clients expect it.
type soakServer struct {
	bin, addr, dataDir, runtimeDir string
	startLog                       string // units append a line here when they start
	dir                            string // the server logs
	proc                           *soakProc
	n                              int      // incarnations started
	refused                        []string // starts refused, with who held the data dir's lock
}

// newSoakServer builds the binary and chooses the port and directories.
func newSoakServer(t *testing.T) *soakServer {
	t.Helper()
	dir := t.TempDir()
	s := &soakServer{bin: clitest.BuildCairn(t), addr: freeAddr(t), dataDir: filepath.Join(dir, "data"), dir: dir,
		runtimeDir: filepath.Join(dir, "runtime")}
	// The units run as users of their own when the test runs as root:
	// their start log is writable by anyone.
	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	s.startLog = filepath.Join(shared, "starts")
	if err := os.WriteFile(s.startLog, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	if err := os.Chmod(s.startLog, 0o666); err != nil {
		t.Fatal(err)
	}
	return s
}

// freeAddr returns a loopback address whose port is free now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// start runs the server and blocks until it serves. A start refused (the
// process exits before it is ready) is recorded with the processes that
// hold the data dir's lock at that moment, and tried again, for at most
// 30 s; then the test fails.
func (s *soakServer) start(t *testing.T) {
	t.Helper()
	args := append([]string{"server", "--listen", s.addr, "--data-dir", s.dataDir, "--write-config=false",
		"--event-grace-period", "5s", "--event-max-workers", "6", "--event-max-jobs", "8"},
		clitest.RuntimeFlags(t, s.runtimeDir)...)
	t0 := time.Now()
	for {
		s.n++
		p, err := startProc(t, s.bin, s.dir, s.n, args)
		if err == nil {
			s.proc = p
			return
		}
		holders := lockHolders(filepath.Join(s.dataDir, "etcd.lock"))
		s.refused = append(s.refused, fmt.Sprintf("%s after the kill: %v; holding the lock: %q", time.Since(t0).Round(time.Millisecond), err, holders))
		t.Logf("start refused: %s", s.refused[len(s.refused)-1])
		if time.Since(t0) > 30*time.Second {
			t.Fatalf("the server does not start again: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// client is an admin client of the server, from the token and CA it wrote
// into its data dir.
func (s *soakServer) client(t *testing.T) client.Interface {
	t.Helper()
	token, err := os.ReadFile(filepath.Join(s.dataDir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(s.dataDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := client.Config{Server: "https://" + s.addr, Token: strings.TrimSpace(string(token)), CertificateAuthorityData: string(ca)}
	tlsConfig, err := cfg.TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.HTTPClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, TLSClientConfig: tlsConfig}}
	c, err := client.NewHTTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// restartFigures are one kill and restart: how long the API was away and
// how long until what was in flight at the kill had converged.
type restartFigures struct {
	at       time.Duration // since the first kill loop started
	down     time.Duration // from the kill to the ready line of the new process
	converge time.Duration // from the ready line until what was in flight finished
	inFlight int           // installations and events not finished at the kill
	timedOut bool          // they had not all finished within the bound (3 min)
}

// killLoop kills and restarts the server at random intervals until ctx
// ends and returns the figures of each restart. It blocks.
func (s *soakServer) killLoop(ctx context.Context, t *testing.T, c client.Interface, cfg soakConfig) []restartFigures {
	var out []restartFigures
	stuck := map[objectKey]bool{}
	began := time.Now()
	for {
		wait := cfg.restartsFrom + time.Duration(rand.Int64N(int64(cfg.restartsTo-cfg.restartsFrom)+1))
		select {
		case <-ctx.Done():
			return out
		case <-time.After(wait):
		}
		if ctx.Err() != nil {
			return out
		}
		// What an earlier restart left unfinished is not waited for again:
		// the final checks report it.
		inFlight := slices.DeleteFunc(unfinished(c), func(k objectKey) bool { return stuck[k] })
		f := s.restart(t, c, began)
		f.inFlight = len(inFlight)
		var left []objectKey
		f.converge, left = awaitFinished(c, inFlight, 3*time.Minute)
		f.timedOut = len(left) > 0
		t.Logf("restart %d at %s: down %s, %d in flight converged in %s (not finished: %v)", len(out)+1,
			f.at.Round(time.Second), f.down.Round(time.Millisecond), f.inFlight, f.converge.Round(time.Millisecond), left)
		for _, k := range left {
			stuck[k] = true
		}
		out = append(out, f)
	}
}

// restart kills the server with SIGKILL and starts it again on the same
// data dir, blocking until it serves.
func (s *soakServer) restart(t *testing.T, c client.Interface, since time.Time) restartFigures {
	t.Helper()
	t0 := time.Now()
	s.proc.kill(t)
	s.start(t)
	return restartFigures{at: t0.Sub(since), down: time.Since(t0)}
}

// objectKey names one object of one kind; uid tells incarnations apart.
type objectKey struct{ kind, ns, name, uid string }

func (k objectKey) String() string {
	return fmt.Sprintf("%s %s/%s (uid %s)", k.kind, k.ns, k.name, k.uid)
}

// unfinished lists the installations and events not finished now (none if
// the lists fail: the figure is then of nothing).
func unfinished(c client.Interface) []objectKey {
	var out []objectKey
	for _, kind := range []string{api.KindInstallation, api.KindEvent} {
		l, err := c.List(context.Background(), kind, "", api.ListOptions{})
		if err != nil {
			continue
		}
		for _, o := range l.Items {
			if !finished(o) {
				out = append(out, objectKey{kind, o.Namespace, o.Name, o.UID})
			}
		}
	}
	return out
}

// finished says whether an installation or event is done: an installation
// Succeeded or Failed for its generation and not being deleted, an event
// in a terminal phase.
func finished(o *api.Object) bool {
	if o.DeletionTimestamp != nil {
		return false
	}
	switch o.Kind {
	case api.KindInstallation:
		var inst api.Installation
		if o.Into(&inst) != nil {
			return false
		}
		p := inst.Status.Phase
		return (p == api.InstallationSucceeded || p == api.InstallationFailed) && inst.Status.ObservedGeneration == inst.Generation
	case api.KindEvent:
		var ev api.Event
		return o.Into(&ev) == nil && ev.Status.Worker.Phase.Terminal()
	}
	return true
}

// awaitFinished polls until each of keys is finished or gone, at most
// bound, and returns how long that took and the keys not finished then.
func awaitFinished(c client.Interface, keys []objectKey, bound time.Duration) (time.Duration, []objectKey) {
	t0 := time.Now()
	left := keys
	for len(left) > 0 {
		if time.Since(t0) > bound {
			return time.Since(t0), left
		}
		var still []objectKey
		for _, k := range left {
			o, err := c.Get(context.Background(), k.kind, k.ns, k.name)
			switch {
			case errors.Is(err, api.ErrNotFound), err == nil && o.UID != k.uid, err == nil && finished(o):
			default:
				still = append(still, k)
			}
		}
		left = still
		if len(left) > 0 {
			time.Sleep(500 * time.Millisecond)
		}
	}
	return time.Since(t0), nil
}

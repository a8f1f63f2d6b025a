package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/runtime"
	"cairn.dev/cairn/unitlog"
)

// Defaults of Options.
const (
	DefaultMaxWorkers  = 16
	DefaultMaxJobs     = 32
	DefaultGracePeriod = 60 * time.Second
	// DefaultUnknownTimeout is how long a worker or job may stay UNKNOWN
	// (its unit lost, not listed, or the runtime not answering) before it
	// is FAILED.
	DefaultUnknownTimeout = 10 * time.Minute
)

// passInterval is how often the scheduler looks at the queue when nothing
// changes (a safety net: every change of an Event or Project kicks it).
const passInterval = 5 * time.Second

// Options configures a Scheduler.
type Options struct {
	// MaxWorkers and MaxJobs bound the workers and the jobs running at once
	// over every project; defaults DefaultMaxWorkers and DefaultMaxJobs.
	// A project's maxConcurrentWorkers and maxConcurrentJobs bound its own.
	MaxWorkers int
	MaxJobs    int
	// GracePeriod is how long after a worker or job ended by itself
	// (SUCCEEDED, FAILED) its runtime resources are cleaned up; default
	// DefaultGracePeriod. Deleted, aborted, canceled and timed-out ones go
	// at once. Logs stay until the event is deleted.
	GracePeriod time.Duration
	// UnknownTimeout is how long a worker or job whose state cannot be
	// observed stays UNKNOWN before it is FAILED with a reason saying so
	// (unless the runtime knows it again, or the worker's timeout comes
	// first); default DefaultUnknownTimeout.
	UnknownTimeout time.Duration
	// Workers is the number of events observed concurrently; default 8.
	Workers int
	// Runtime runs the units; default the term's (Setup fails without
	// one).
	Runtime runtime.Runtime
	// APIServer is the URL units reach the API at (CAIRN_SERVER), and
	// APICAFile the PEM file of the CA its certificate is issued by
	// (CAIRN_CA_FILE; "" when the server has none of cairn's); default
	// the term's.
	APIServer string
	APICAFile string
	// Path is the PATH of units whose spec sets none; default this
	// process's.
	Path string
	// BuildUnit turns a worker or job into the runtime's spec; default
	// UnitSpec (local processes). A cluster runtime brings its own (an
	// image, secrets mounted as files); the scheduler and the observer stay
	// as they are. A *StartError fails the worker or job with its reason.
	BuildUnit func(UnitInput) (runtime.Spec, error)
	// Now is the clock; default time.Now.
	Now func() time.Time
	// LogTailBytes is how much of each ended unit's output is kept
	// through the API (package unitlog); default api.DefaultLogTailBytes.
	LogTailBytes int
}

// Scheduler is the event scheduler and observer: one controller keyed by
// event ("ns/name"), fed by the Event informer, and one scheduling loop
// over the queue of PENDING events. It acts through the client (status
// writes with compare-and-swap) and the runtime.
type Scheduler struct {
	c    client.Interface
	rt   runtime.Runtime
	opts Options
	log  *slog.Logger
	m    *metrics

	ctrl     *controller.Controller
	events   *informer.Informer
	projects *informer.Informer
	kick     chan struct{}
	waiters  sync.WaitGroup

	mu sync.Mutex
	// claimed holds the workers ("ns/name") and jobs ("ns/name/job") this
	// scheduler claimed that the cache still shows PENDING: they count as
	// running meanwhile.
	claimed map[string]bool
	// waiting says why each PENDING worker waits (for the trace).
	waiting map[string]Wait
	// uids remembers each event's uid, to remove its units once it is gone.
	uids map[string]string
	// cleaned holds the units this process has cleaned up.
	cleaned map[string]bool
	// unknown holds since when each unit of a non-terminal worker or job
	// could not be observed (unknownSince).
	unknown map[string]time.Time
	// watching holds the units a goroutine waits on.
	watching map[string]bool
	// decoded caches the events the last pass decoded, by key.
	decoded map[string]cachedEvent
	// keep keeps the output of ended units through the API.
	keep *unitlog.Keeper
}

// newScheduler builds a scheduler acting through c, logging to log and
// registering its metrics (cairn_events_queued, cairn_events_running,
// cairn_events_claims_total) on reg (none when nil). Errors: no Runtime.
func newScheduler(c client.Interface, opts Options, log *slog.Logger, reg prometheus.Registerer) (*Scheduler, error) {
	if opts.Runtime == nil {
		return nil, errors.New("scheduler: Options.Runtime is required")
	}
	if opts.MaxWorkers <= 0 {
		opts.MaxWorkers = DefaultMaxWorkers
	}
	if opts.MaxJobs <= 0 {
		opts.MaxJobs = DefaultMaxJobs
	}
	if opts.GracePeriod <= 0 {
		opts.GracePeriod = DefaultGracePeriod
	}
	if opts.UnknownTimeout <= 0 {
		opts.UnknownTimeout = DefaultUnknownTimeout
	}
	if opts.Workers <= 0 {
		opts.Workers = 8
	}
	if opts.Path == "" {
		opts.Path = os.Getenv("PATH")
	}
	if opts.BuildUnit == nil {
		opts.BuildUnit = UnitSpec
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log = log.With("controller", "events")
	return &Scheduler{c: c, rt: opts.Runtime, opts: opts, log: log, m: newMetrics(reg, log), keep: unitlog.New(c, opts.Runtime, opts.LogTailBytes),
		kick:    make(chan struct{}, 1),
		claimed: map[string]bool{}, waiting: map[string]Wait{}, uids: map[string]string{},
		cleaned: map[string]bool{}, unknown: map[string]time.Time{}, watching: map[string]bool{}}, nil
}

// Setup adds the event scheduler and observer to a manager's term, as
// the controller "events": it runs units on the term's runtime (or
// opts.Runtime; it fails without one), reads Events and Projects through
// the term's shared informers, acts through the term's client and records
// its steps in the term's traces. Once the caches are in, it removes the
// runtime units of events that no longer exist (deleted while nobody
// watched), then observes events and runs a scheduling pass whenever an
// Event or a Project changes, until the term ends. It never blocks.
func Setup(t *manager.Term, opts Options) error {
	if opts.Runtime == nil {
		opts.Runtime = t.Runtime
	}
	if opts.Runtime == nil {
		return errors.New("scheduler: the process has no runtime to run workers on")
	}
	if opts.APIServer == "" {
		opts.APIServer, opts.APICAFile = t.APIServer, t.APICAFile
	}
	s, err := newScheduler(t.Client, opts, t.Logger, t.Metrics)
	if err != nil {
		return err
	}
	s.events, s.projects = t.Informers.For(api.KindEvent), t.Informers.For(api.KindProject)
	poke := func(*controller.Controller) informer.Handler {
		return informer.Handler{
			OnAdd:    func(*api.Object) { s.poke() },
			OnUpdate: func(_, _ *api.Object) { s.poke() },
			OnDelete: func(*api.Object) { s.poke() },
		}
	}
	s.ctrl, err = manager.NewBuilder(t, "events").
		Handles(api.KindEvent, s.handler).
		Handles(api.KindProject, poke).
		TraceKind(api.KindEvent).
		Workers(opts.Workers).
		Starting(func(ctx context.Context, _ *controller.Controller) error {
			if err := s.sweep(ctx); err != nil {
				s.log.Warn("could not look for the units of deleted events", "err", err)
			}
			return nil
		}).
		Also(func(ctx context.Context, _ *controller.Controller) { s.loop(ctx) }).
		Stopped(s.waiters.Wait). // the goroutines that wait on units
		Build(controller.ReconcilerFunc(s.reconcile))
	return err
}

// handler is the Event informer's handler, feeding ctrl.
func (s *Scheduler) handler(ctrl *controller.Controller) informer.Handler {
	return informer.Handler{
		OnAdd:    func(o *api.Object) { s.changed(ctrl, o) },
		OnUpdate: func(_, o *api.Object) { s.changed(ctrl, o) },
		OnDelete: func(o *api.Object) { s.changed(ctrl, o) },
	}
}

// changed notes an event's uid, enqueues it and kicks the scheduling loop.
func (s *Scheduler) changed(ctrl *controller.Controller, o *api.Object) {
	key := api.Key(o.Namespace, o.Name)
	s.mu.Lock()
	s.uids[key] = o.UID
	s.mu.Unlock()
	ctrl.Enqueue(key)
	s.poke()
}

func (s *Scheduler) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// sweep removes the units of events that no longer exist.
func (s *Scheduler) sweep(ctx context.Context) error {
	units, err := s.rt.List(ctx)
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, o := range s.events.List() {
		live[o.UID] = true
	}
	for _, u := range units {
		if uid, ok := eventUID(u.ID); ok && !live[uid] {
			if err := s.rt.Remove(ctx, u.ID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
				return err
			}
		}
	}
	return nil
}

// eventUID returns the uid of the event a unit ID belongs to.
func eventUID(id string) (string, bool) {
	const uidLen = 36
	if !strings.HasPrefix(id, "ev-") || len(id) < 3+uidLen {
		return "", false
	}
	return id[3 : 3+uidLen], true
}

// loop runs a scheduling pass whenever something changed, and every
// passInterval, until ctx is done.
func (s *Scheduler) loop(ctx context.Context) {
	t := time.NewTicker(passInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		case <-t.C:
		}
		s.pass(ctx)
	}
}

// Waiting returns why the worker of the event key waits, if it does.
func (s *Scheduler) Waiting(key string) (Wait, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.waiting[key]
	return w, ok
}

// unitFor is the unit of a worker (job "") or job of ev.
func unitFor(ev *api.Event, job string) string {
	if job == "" {
		return api.WorkerUnitID(ev.UID)
	}
	return api.JobUnitID(ev.UID, job)
}

// String says what a Unit is, for the trace: "none", "Running", "Exited (code 3)".
func (u Unit) String() string {
	if !u.Exists {
		return "none"
	}
	if u.State.Phase == runtime.PhaseExited {
		return fmt.Sprintf("%s (code %d)", u.State.Phase, u.State.ExitCode)
	}
	return string(u.State.Phase)
}

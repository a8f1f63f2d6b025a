// Package manager runs the controllers of one process: it holds the list of
// controllers to run, the leader election that makes exactly one process
// (of every `cairn server` and `cairn controller-manager` sharing an API)
// run them, the shared informers they read from, and the traces they
// record.
//
// Warm standby: the shared informers start when the process starts, not
// when it is elected, and stay current whether or not it leads, together
// with the warm parts of the controllers that have one (Controller.Standby:
// the garbage collector's dependency graph). Only the acting part of each
// controller — its workers, which reconcile and write — runs per term:
// when this process is elected, the manager calls each controller's Setup
// with a Term whose informers are a view of the process's (handlers
// registered on it are replayed the whole cache, so the work queues fill
// from the current state, and are removed when the term ends), then runs
// every runnable. A new leader thus acts within moments of its election,
// however many objects there are.
//
// Fenced leadership: a term's client (Term.Client) fences every write with
// the term's api.Fence, so a write commits only if the Lease is still in
// this term in the same store transaction. The term ends when leadership
// is lost (the lease layer cancels it before the Lease can expire in the
// others' eyes), when the process stops, when any runnable fails (the
// lease is released, so another process takes over) or, at once, when a
// write is refused because the fence no longer holds.
package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/lease"
	"cairn.dev/cairn/runtime"
	"cairn.dev/cairn/trace"
)

// LeaseName is the Lease every controller process campaigns for.
const LeaseName = "controllers"

// Runnable is a long-running part of a controller (usually a
// controller.Controller). Start blocks until ctx is done and then returns
// nil; it returns an error when the part cannot go on, which ends the term.
type Runnable interface {
	Start(ctx context.Context) error
}

// RunnableFunc adapts a function to Runnable.
type RunnableFunc func(ctx context.Context) error

// Start calls f(ctx).
func (f RunnableFunc) Start(ctx context.Context) error { return f(ctx) }

// Controller is one entry of a process's controller list: a name (what
// --controllers selects) and the function that builds it for a term.
type Controller struct {
	Name string
	// Setup builds the controller for term t: it reads its informers from
	// t.Informers, registers handlers and indexes, and adds its runnables
	// with t.Add. It must not block. An error ends the term.
	Setup func(t *Term) error
	// Standby, when set, builds a controller with a warm part that lives
	// as long as the process: it is called once, when Run starts and
	// before the process campaigns, registers what must stay current while
	// the process waits (handlers on p.Informers, runnables added with
	// p.Add, which run from then on whether or not the process leads) and
	// returns the setup of each term, used instead of Setup. It must not
	// block. An error ends Run.
	Standby func(p *Process) (setup func(t *Term) error, err error)
}

// Term is what a controller's Setup gets: the pieces shared by every
// controller during one leadership term.
type Term struct {
	// Client is the API client every controller acts through. With leader
	// election it fences every write with the term's Fence: a write made
	// after the term has lost the Lease fails with a NotLeader Conflict
	// (api.IsNotLeader), and the term ends at once.
	Client client.Interface
	// Fence is the term's fence; zero without leader election.
	Fence api.Fence
	// Informers is a view of the process's shared informer factory (one
	// informer per kind, started with the process and current already):
	// handlers registered through it get the whole cache replayed and are
	// removed when the term ends.
	Informers *informer.Factory
	// Logger is the process's logger.
	Logger *slog.Logger
	// Metrics is where controllers register their metrics (shared across
	// terms: use controller.RegisterOrReuse).
	Metrics prometheus.Registerer
	// Traces keeps the last reconciles of every object (shared across
	// terms); pass it to controller.Options.Traces.
	Traces *trace.Store
	// Runtime is where the process runs commands (container deploy items,
	// event workers and jobs), shared across terms; nil when the process
	// has none, and a controller that needs one fails its Setup. Its
	// Start refuses (ErrTermEnded) once the term is no longer Valid by
	// this process's clock: pass it the reconcile's context.
	Runtime runtime.Runtime
	// APIServer is the URL that commands started on Runtime reach the API
	// at (CAIRN_SERVER); empty when the process has no runtime. APICAFile
	// is the PEM file of the CA its certificate verifies with
	// (CAIRN_CA_FILE); empty when the system's roots do.
	APIServer string
	APICAFile string

	runnables
}

// Process is what a controller's Standby gets: the pieces that live as
// long as the process, whether or not it leads.
type Process struct {
	// Client reads the API. It refuses every write (Forbidden): a warm
	// part only watches; writes are a term's, through Term.Client.
	Client client.Interface
	// Informers is the process's shared informer factory; handlers
	// registered on it live as long as the process.
	Informers *informer.Factory
	// Logger, Metrics and Traces are the process's, as in Term.
	Logger  *slog.Logger
	Metrics prometheus.Registerer
	Traces  *trace.Store

	runnables
	deps *dependents // the manager's (SetDependents)
}

// runnables collects named Runnables; safe for concurrent use.
type runnables struct {
	mu   sync.Mutex
	list []named
}

// Add registers r, under name (for logs), to run for the term (on a Term)
// or for the process's lifetime (on a Process). It never blocks.
func (rs *runnables) Add(name string, r Runnable) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.list = append(rs.list, named{name, r})
}

func (rs *runnables) all() []named {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.list)
}

type named struct {
	name string
	r    Runnable
}

// Options configures a Manager.
type Options struct {
	// Client is the API client of the controllers. Required.
	Client client.Interface
	// Controllers are the controllers to run, in order.
	Controllers []Controller
	// Identity is this process's URL, stored as the lease holder: where
	// its traces and metrics are served. Required with LeaderElection.
	Identity string
	// LeaderElection makes the manager campaign for the Lease
	// "controllers" and run the controllers only while it holds it. Without
	// it the controllers run at once (a single process, or tests).
	LeaderElection bool
	// LeaseDuration is how long a silent leader blocks failover; default 5s.
	LeaseDuration time.Duration
	// RestartBackoff is the wait after a failed term before running the
	// controllers again when there is no election; default 1s.
	RestartBackoff time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Metrics, when set, receives the controllers' metrics and the
	// manager's own: cairn_leader and cairn_manager_terms_total{result}.
	Metrics prometheus.Registerer
	// Traces keeps traces across terms; default a store with the default
	// bounds (trace.NewStore(0, 0)).
	Traces *trace.Store
	// Runtime and APIServer are handed to the controllers (Term.Runtime,
	// Term.APIServer). The manager does not close the Runtime.
	Runtime   runtime.Runtime
	APIServer string
	APICAFile string
}

// Manager runs controllers while this process leads. Build it with New,
// run it with Run. Its methods are safe for concurrent use.
type Manager struct {
	opts    Options
	log     *slog.Logger
	leading atomic.Bool
	started atomic.Bool

	leader prometheus.Gauge
	terms  *prometheus.CounterVec
	deps   dependents // what a deletion would take (dependents.go)
}

// New checks opts and builds a Manager. Errors: no client, or an election
// without an identity.
func New(opts Options) (*Manager, error) {
	if opts.Client == nil {
		return nil, errors.New("manager: Options.Client is required")
	}
	if opts.LeaderElection && opts.Identity == "" {
		return nil, errors.New("manager: leader election needs Options.Identity (this process's URL)")
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = 5 * time.Second
	}
	if opts.RestartBackoff <= 0 {
		opts.RestartBackoff = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Traces == nil {
		opts.Traces = trace.NewStore(0, 0)
	}
	m := &Manager{opts: opts, log: opts.Logger.With("component", "manager")}
	m.leader = prometheus.NewGauge(prometheus.GaugeOpts{Name: "cairn_leader",
		Help: "1 while this process leads the controllers."})
	m.terms = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_manager_terms_total",
		Help: "Leadership terms that ended: stopped (lease lost or shutdown), failed (a controller failed) or fenced (a write was refused: the Lease was lost)."}, []string{"result"})
	if opts.Metrics != nil {
		var err error
		m.leader = controller.RegisterOrReuse(opts.Metrics, m.leader, &err)
		m.terms = controller.RegisterOrReuse(opts.Metrics, m.terms, &err)
		if err != nil {
			return nil, fmt.Errorf("manager: register metrics: %w", err)
		}
	}
	return m, nil
}

// Leading reports whether this process runs the controllers now. It never
// blocks.
func (m *Manager) Leading() bool { return m.leading.Load() }

// Traces returns the store of the traces recorded by this process's
// controllers.
func (m *Manager) Traces() *trace.Store { return m.opts.Traces }

// Run starts the process's shared informers and the warm parts of the
// controllers (Controller.Standby), then campaigns (with LeaderElection) or
// runs at once, and runs a term of the controllers each time this process
// leads, until ctx is done. It blocks; it returns nil when ctx is done and
// every controller has stopped. It returns an error when a Standby fails,
// or a warm part's runnable fails (the process cannot take over without
// it). A Manager runs once: a second Run returns an error at once.
func (m *Manager) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return errors.New("manager: Run called twice")
	}
	factory := informer.NewFactory(m.opts.Client, informer.Options{Logger: m.opts.Logger})
	defer factory.Shutdown() // last: after every runnable has stopped
	p := &Process{Client: readOnly{m.opts.Client}, Informers: factory, Logger: m.opts.Logger,
		Metrics: m.metrics(), Traces: m.opts.Traces, deps: &m.deps}
	setups := make([]func(*Term) error, len(m.opts.Controllers))
	for i, c := range m.opts.Controllers {
		setups[i] = c.Setup
		if c.Standby == nil {
			continue
		}
		setup, err := c.Standby(p)
		if err != nil {
			return fmt.Errorf("manager: set up the standby part of controller %s: %w", c.Name, err)
		}
		setups[i] = setup
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait() // the standby parts stop before the informers
	}()
	factory.Start(ctx)
	var failed atomic.Pointer[error] // the first standby part that failed
	for _, n := range p.all() {
		wg.Go(func() {
			err := n.r.Start(ctx)
			if err == nil && ctx.Err() == nil {
				err = errors.New("stopped by itself")
			}
			if err != nil && ctx.Err() == nil {
				err = fmt.Errorf("manager: standby part %s: %w", n.name, err)
				if failed.CompareAndSwap(nil, &err) {
					cancel()
				}
			}
		})
	}
	pr := &process{factory: factory, setups: setups}
	if m.opts.LeaderElection {
		err := lease.Run(ctx, m.opts.Client, lease.Options{
			Name: LeaseName, Identity: m.opts.Identity, Duration: m.opts.LeaseDuration, Logger: m.opts.Logger,
		}, func(ctx context.Context, f api.Fence) { _ = m.term(ctx, pr, &f) })
		if err != nil {
			return err
		}
	} else {
		for ctx.Err() == nil {
			if err := m.term(ctx, pr, nil); err != nil && ctx.Err() == nil {
				select {
				case <-ctx.Done():
				case <-time.After(m.opts.RestartBackoff):
				}
			}
		}
	}
	if err := failed.Load(); err != nil {
		return *err
	}
	return nil
}

// process is what every term of one Run shares.
type process struct {
	factory *informer.Factory
	setups  []func(*Term) error
}

// metrics is where controllers register: Options.Metrics, or a registry
// that is discarded.
func (m *Manager) metrics() prometheus.Registerer {
	if m.opts.Metrics != nil {
		return m.opts.Metrics
	}
	return prometheus.NewRegistry() // discarded: controllers may register freely
}

// errFenced ends a term whose write was refused: the fence no longer holds.
var errFenced = errors.New("manager: a write was refused because this process no longer holds the Lease")

// term runs the controllers until ctx is done, one of them fails (it
// returns the failure), or a write is refused by the fence (it returns
// errFenced). fence is nil without leader election.
func (m *Manager) term(ctx context.Context, p *process, fence *api.Fence) (err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	m.leading.Store(true)
	m.leader.Set(1)
	defer func() {
		m.leading.Store(false)
		m.leader.Set(0)
		result := "stopped"
		switch {
		case errors.Is(err, errFenced):
			result = "fenced"
			m.log.Warn("stepping down: "+err.Error(), "err", context.Cause(ctx))
		case err != nil:
			result = "failed"
			m.log.Error("a controller failed: ending the term so that another process can take over", "err", err)
		}
		m.terms.WithLabelValues(result).Inc()
	}()
	t := &Term{
		Client:    m.opts.Client,
		Informers: p.factory.Scope(),
		Logger:    m.opts.Logger,
		Metrics:   m.metrics(),
		Traces:    m.opts.Traces,
		Runtime:   guardStarts(m.opts.Runtime),
		APIServer: m.opts.APIServer,
		APICAFile: m.opts.APICAFile,
	}
	if fence != nil {
		t.Fence = *fence
		t.Client = client.Fenced(m.opts.Client, *fence, func(err error) { cancel(fmt.Errorf("%w: %w", errFenced, err)) })
	}
	defer t.Informers.Shutdown() // last: after the runnables have stopped
	var wg sync.WaitGroup
	defer wg.Wait() // the runnables stop before the term ends
	defer cancel(nil)
	// The controllers' status writes are committed together when they
	// come together (client.StatusGroup), fenced as every other write.
	var statuses *client.StatusGroup
	if t.Client, statuses = client.GroupStatuses(t.Client); statuses != nil {
		wg.Go(func() { statuses.Run(ctx) })
	}
	for i, setup := range p.setups {
		if err := setup(t); err != nil {
			return fmt.Errorf("manager: set up controller %s: %w", m.opts.Controllers[i].Name, err)
		}
	}
	runnables := t.all()
	errc := make(chan error, len(runnables))
	for _, n := range runnables {
		wg.Go(func() {
			err := n.r.Start(ctx)
			if err == nil && ctx.Err() == nil {
				err = errors.New("stopped by itself")
			}
			if err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("%s: %w", n.name, err)
			}
		})
	}
	m.log.Info("controllers started", "controllers", len(m.opts.Controllers), "runnables", len(runnables))
	select {
	case <-ctx.Done():
		if cause := context.Cause(ctx); errors.Is(cause, errFenced) {
			return errFenced
		}
		return nil
	case err := <-errc:
		return err
	}
}

// Package manager runs the controllers of one process: it holds the list of
// controllers to run, the leader election that makes exactly one process
// (of every `cairn server` and `cairn controller-manager` sharing an API)
// run them, the shared informers they read from, and the traces they
// record.
//
// Controllers are built anew for every leadership term: when this process
// is elected, the manager creates one informer factory for the term, calls
// each controller's Setup (which registers its handlers and indexes on the
// shared informers and adds its runnables), starts the informers, then runs
// every runnable. The term ends when leadership is lost, when the process
// stops, or when any runnable fails: a controller that fails ends the
// leader's term (the lease is released, so another process takes over)
// instead of being logged and forgotten.
package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
}

// Term is what a controller's Setup gets: the pieces shared by every
// controller during one leadership term.
type Term struct {
	// Client is the API client every controller acts through.
	Client client.Interface
	// Informers is the term's shared informer factory: one informer per
	// kind, shared by every controller.
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
	// has none, and a controller that needs one fails its Setup.
	Runtime runtime.Runtime
	// APIServer is the URL that commands started on Runtime reach the API
	// at (CAIRN_SERVER); empty when the process has no runtime. APICAFile
	// is the PEM file of the CA its certificate verifies with
	// (CAIRN_CA_FILE); empty when the system's roots do.
	APIServer string
	APICAFile string

	mu        sync.Mutex
	runnables []named
}

type named struct {
	name string
	r    Runnable
}

// Add registers r, under name (for logs), to run for the term. It never
// blocks.
func (t *Term) Add(name string, r Runnable) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.runnables = append(t.runnables, named{name, r})
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
		Help: "Leadership terms that ended: stopped (lease lost or shutdown) or failed (a controller failed)."}, []string{"result"})
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

// Run campaigns (with LeaderElection) or runs at once, and runs a term of
// the controllers each time this process leads, until ctx is done. It
// blocks; it returns nil when ctx is done and every controller of the
// current term has stopped. A Manager runs once: a second Run returns an
// error at once.
func (m *Manager) Run(ctx context.Context) error {
	if !m.started.CompareAndSwap(false, true) {
		return errors.New("manager: Run called twice")
	}
	if m.opts.LeaderElection {
		return lease.Run(ctx, m.opts.Client, lease.Options{
			Name: LeaseName, Identity: m.opts.Identity, Duration: m.opts.LeaseDuration, Logger: m.opts.Logger,
		}, func(ctx context.Context) { m.term(ctx) })
	}
	for ctx.Err() == nil {
		if err := m.term(ctx); err != nil && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(m.opts.RestartBackoff):
			}
		}
	}
	return nil
}

// term runs the controllers until ctx is done or one of them fails, and
// returns the failure.
func (m *Manager) term(ctx context.Context) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m.leading.Store(true)
	m.leader.Set(1)
	defer func() {
		m.leading.Store(false)
		m.leader.Set(0)
		result := "stopped"
		if err != nil {
			result = "failed"
			m.log.Error("a controller failed: ending the term so that another process can take over", "err", err)
		}
		m.terms.WithLabelValues(result).Inc()
	}()
	t := &Term{
		Client:    m.opts.Client,
		Informers: informer.NewFactory(m.opts.Client, informer.Options{Logger: m.opts.Logger}),
		Logger:    m.opts.Logger,
		Metrics:   m.opts.Metrics,
		Traces:    m.opts.Traces,
		Runtime:   m.opts.Runtime,
		APIServer: m.opts.APIServer,
		APICAFile: m.opts.APICAFile,
	}
	if t.Metrics == nil {
		t.Metrics = prometheus.NewRegistry() // discarded: controllers may register freely
	}
	defer t.Informers.Shutdown() // last: after the runnables have stopped
	var wg sync.WaitGroup
	defer wg.Wait() // the runnables stop before the term ends
	defer cancel()
	for _, c := range m.opts.Controllers {
		if err := c.Setup(t); err != nil {
			return fmt.Errorf("manager: set up controller %s: %w", c.Name, err)
		}
	}
	t.Informers.Start(ctx)
	t.mu.Lock()
	runnables := t.runnables
	t.mu.Unlock()
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
		return nil
	case err := <-errc:
		return err
	}
}

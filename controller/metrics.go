package controller

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// metrics holds the collectors of every controller sharing one
// prometheus.Registerer. Each series carries the controller's name.
type metrics struct {
	depth          *prometheus.GaugeVec
	adds           *prometheus.CounterVec
	retries        *prometheus.CounterVec
	queueLatency   *prometheus.HistogramVec
	workDuration   *prometheus.HistogramVec
	unfinished     *prometheus.GaugeVec
	longestRunning *prometheus.GaugeVec
	reconciles     *prometheus.CounterVec
}

// Reconcile outcomes, the values of the "result" label of
// cairn_controller_reconciles_total.
const (
	resultSuccess  = "success"
	resultRequeue  = "requeue_after"
	resultError    = "error"
	resultTerminal = "terminal_error"
)

// newMetrics creates the collectors and registers them on reg. When another
// controller already registered them on reg, the existing collectors are
// shared, so any number of controllers can use one Registerer.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	buckets := prometheus.ExponentialBuckets(0.001, 4, 9) // 1ms .. ~65s
	m := &metrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cairn_workqueue_depth",
			Help: "Number of keys waiting in a controller's work queue.",
		}, []string{"name"}),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_workqueue_adds_total",
			Help: "Keys added to a controller's work queue.",
		}, []string{"name"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_workqueue_retries_total",
			Help: "Delayed adds to a controller's work queue (backoff retries and requeue-after).",
		}, []string{"name"}),
		queueLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cairn_workqueue_queue_duration_seconds",
			Help:    "Time a key waits in the work queue before a worker takes it.",
			Buckets: buckets,
		}, []string{"name"}),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cairn_workqueue_work_duration_seconds",
			Help:    "Time a worker spends on one key.",
			Buckets: buckets,
		}, []string{"name"}),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cairn_workqueue_unfinished_work_seconds",
			Help: "Seconds of work in progress not yet observed by work_duration.",
		}, []string{"name"}),
		longestRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cairn_workqueue_longest_running_processor_seconds",
			Help: "Seconds the longest running worker of a controller has been busy.",
		}, []string{"name"}),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_controller_reconciles_total",
			Help: "Reconciles by controller and result (success, requeue_after, error, terminal_error).",
		}, []string{"name", "result"}),
	}
	var err error
	m.depth = RegisterOrReuse(reg, m.depth, &err)
	m.adds = RegisterOrReuse(reg, m.adds, &err)
	m.retries = RegisterOrReuse(reg, m.retries, &err)
	m.queueLatency = RegisterOrReuse(reg, m.queueLatency, &err)
	m.workDuration = RegisterOrReuse(reg, m.workDuration, &err)
	m.unfinished = RegisterOrReuse(reg, m.unfinished, &err)
	m.longestRunning = RegisterOrReuse(reg, m.longestRunning, &err)
	m.reconciles = RegisterOrReuse(reg, m.reconciles, &err)
	return m, err
}

// RegisterOrReuse registers c on reg and returns it, or the collector of
// the same description already registered there (a controller started
// again in the same process, e.g. after a leader change, keeps reporting on
// the same series). The first other failure is kept in *errp. Controllers
// register their own metrics with it.
func RegisterOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	if *errp == nil {
		*errp = err
	}
	return c
}

// provider implements workqueue.MetricsProvider for one controller's queue
// over the shared collectors. The queue calls each method once, with the
// queue's name (the controller's name).
type provider struct{ m *metrics }

var _ workqueue.MetricsProvider = provider{}

func (p provider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.m.depth.WithLabelValues(name)
}

func (p provider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.m.adds.WithLabelValues(name)
}

func (p provider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.m.queueLatency.WithLabelValues(name)
}

func (p provider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.m.workDuration.WithLabelValues(name)
}

func (p provider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.m.unfinished.WithLabelValues(name)
}

func (p provider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.m.longestRunning.WithLabelValues(name)
}

func (p provider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.m.retries.WithLabelValues(name)
}

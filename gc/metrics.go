package gc

import (
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the collector's own Prometheus metrics. A nil *metrics
// records nothing.
type metrics struct {
	nodes   prometheus.Gauge
	actions *prometheus.CounterVec
}

// newMetrics registers the collector's metrics on reg, or reuses the ones
// an earlier collector registered there: a process builds a new Collector
// for every leader term, all reporting to the same registry. It returns nil
// when reg is nil or a metric cannot be registered (another collector of
// the same name and a different shape holds its place; logged, and the
// collector runs without metrics).
func newMetrics(reg prometheus.Registerer, log *slog.Logger) *metrics {
	if reg == nil {
		return nil
	}
	var err error
	m := &metrics{
		nodes: register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cairn_gc_graph_nodes",
			Help: "Objects in the garbage collector's dependency graph.",
		}), &err),
		actions: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_gc_actions_total",
			Help: "Writes of the garbage collector by action: cascade and orphan (deletions), detach (owner reference removed), finalize (cascade-deletion removed), report-cycle.",
		}, []string{"action"}), &err),
	}
	if err != nil {
		log.Error("cannot register garbage collector metrics", "err", err)
		return nil
	}
	return m
}

// register registers c on reg and returns it, or the collector of the same
// description already registered there. The first other failure is kept in
// *errp. (The same approach as the controller package's work queue
// metrics.)
func register[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
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

func (m *metrics) setNodes(n int) {
	if m != nil {
		m.nodes.Set(float64(n))
	}
}

func (m *metrics) action(a string) {
	if m != nil {
		m.actions.WithLabelValues(a).Inc()
	}
}

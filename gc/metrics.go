package gc

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/controller"
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
		nodes: controller.RegisterOrReuse(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cairn_gc_graph_nodes",
			Help: "Objects in the garbage collector's dependency graph.",
		}), &err),
		actions: controller.RegisterOrReuse(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
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

package gc

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the collector's own Prometheus metrics. A nil *metrics
// records nothing.
type metrics struct {
	nodes   prometheus.Gauge
	actions *prometheus.CounterVec
}

// newMetrics registers the collector's metrics on reg, or returns nil when
// reg is nil or registration fails (logged; the collector runs without).
func newMetrics(reg prometheus.Registerer, log *slog.Logger) *metrics {
	if reg == nil {
		return nil
	}
	m := &metrics{
		nodes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cairn_gc_graph_nodes",
			Help: "Objects in the garbage collector's dependency graph.",
		}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_gc_actions_total",
			Help: "Writes of the garbage collector by action: cascade and orphan (deletions), detach (owner reference removed), finalize (cascade-deletion removed), report-cycle.",
		}, []string{"action"}),
	}
	for _, c := range []prometheus.Collector{m.nodes, m.actions} {
		if err := reg.Register(c); err != nil {
			log.Error("cannot register garbage collector metrics", "err", err)
			return nil
		}
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

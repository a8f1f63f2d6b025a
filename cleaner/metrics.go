package cleaner

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/controller"
)

// metrics are the controller's own Prometheus metrics. A nil *metrics
// records nothing.
type metrics struct {
	scheduled   prometheus.Gauge
	pending     prometheus.Gauge
	evaluations *prometheus.CounterVec
	deletions   prometheus.Counter
}

// newMetrics registers the metrics on reg, or reuses those an earlier
// controller (of an earlier leader term) registered there. It returns nil
// when reg is nil or a metric cannot be registered (logged).
func newMetrics(reg prometheus.Registerer, log *slog.Logger) *metrics {
	if reg == nil {
		return nil
	}
	var err error
	m := &metrics{
		scheduled: controller.RegisterOrReuse(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cairn_cleaner_scheduled",
			Help: "Cleaners in the cleaner's evaluation schedule.",
		}), &err),
		pending: controller.RegisterOrReuse(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cairn_cleaner_statuses_pending",
			Help: "Cleaner statuses decided and not written yet.",
		}), &err),
		evaluations: controller.RegisterOrReuse(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_cleaner_evaluations_total",
			Help: "Evaluations of Cleaners' conditions by result: true (all held), false, error.",
		}, []string{"result"}), &err),
		deletions: controller.RegisterOrReuse(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cairn_cleaner_deletions_total",
			Help: "Objects the cleaner deleted (targets and Cleaners).",
		}), &err),
	}
	if err != nil {
		log.Error("cannot register cleaner metrics", "err", err)
		return nil
	}
	return m
}

func (m *metrics) evaluated(d Decision) {
	if m == nil || !d.Evaluated {
		return
	}
	switch {
	case d.LastError != nil:
		m.evaluations.WithLabelValues("error").Inc()
	case d.Action == ActDelete:
		m.evaluations.WithLabelValues("true").Inc()
	default:
		m.evaluations.WithLabelValues("false").Inc()
	}
}

func (m *metrics) deleted() {
	if m != nil {
		m.deletions.Inc()
	}
}

func (m *metrics) setScheduled(n int) {
	if m != nil {
		m.scheduled.Set(float64(n))
	}
}

func (m *metrics) setPendingStatuses(n int) {
	if m != nil {
		m.pending.Set(float64(n))
	}
}

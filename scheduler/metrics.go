package scheduler

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/controller"
)

// metrics are the scheduler's own Prometheus metrics. A nil *metrics
// records nothing.
type metrics struct {
	queued  *prometheus.GaugeVec
	running *prometheus.GaugeVec
	claims  *prometheus.CounterVec
}

// newMetrics registers the scheduler's metrics on reg, or reuses those an
// earlier term's scheduler registered there. It returns nil when reg is nil
// or a metric cannot be registered (logged; the scheduler runs without).
func newMetrics(reg prometheus.Registerer, log *slog.Logger) *metrics {
	if reg == nil {
		return nil
	}
	var err error
	m := &metrics{
		queued: controller.RegisterOrReuse(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cairn_events_queued",
			Help: "Workers (what=worker) and jobs (what=job) waiting for capacity, at the last scheduling pass.",
		}, []string{"what"}), &err),
		running: controller.RegisterOrReuse(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cairn_events_running",
			Help: "Workers and jobs STARTING, RUNNING or UNKNOWN, at the last scheduling pass.",
		}, []string{"what"}), &err),
		claims: controller.RegisterOrReuse(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_events_claims_total",
			Help: "Workers and jobs claimed (PENDING to STARTING) by the scheduler.",
		}, []string{"what"}), &err),
	}
	if err != nil {
		log.Error("cannot register the event scheduler's metrics", "err", err)
		return nil
	}
	return m
}

// observe records a pass: what waits and what runs once the workers and
// jobs it chose are claimed.
func (m *metrics) observe(snap snapshot, workers, jobs int) {
	if m == nil {
		return
	}
	sum := func(by map[string]int) (n int) {
		for _, v := range by {
			n += v
		}
		return n
	}
	m.queued.WithLabelValues("worker").Set(float64(len(snap.workers) - workers))
	m.queued.WithLabelValues("job").Set(float64(len(snap.jobs) - jobs))
	m.running.WithLabelValues("worker").Set(float64(sum(snap.workersByPrj) + workers))
	m.running.WithLabelValues("job").Set(float64(sum(snap.jobsByPrj) + jobs))
}

// claimed counts n successful claims of what ("worker" or "job").
func (m *metrics) claimed(what string, n int) {
	if m != nil {
		m.claims.WithLabelValues(what).Add(float64(n))
	}
}

package server

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus collectors.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	watches  *prometheus.GaugeVec
	// watchDrops counts the watches the server ended for their client:
	// reason "behind" (too far behind the changes) or "write-timeout" (it
	// took nothing for the write timeout).
	watchDrops *prometheus.CounterVec
	handler    http.Handler
}

func newMetrics(reg *prometheus.Registry) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cairn_http_requests_total",
			Help: "API requests by verb, resource and HTTP status code.",
		}, []string{"verb", "resource", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "cairn_http_request_duration_seconds",
			Help: "Latency of API requests by verb and resource (watches excluded).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5,
				10, 30},
		}, []string{"verb", "resource"}),
		watches: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cairn_watches",
			Help: "Open watch streams by resource.",
		}, []string{"resource"}),
	}
	m.watchDrops = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cairn_watch_drops_total",
		Help: "Watches ended because their client fell too far behind the changes (reason=behind: it resumes from its last resourceVersion) or took nothing for the write timeout (reason=write-timeout).",
	}, []string{"reason"})
	for _, reason := range []string{"behind", "write-timeout"} {
		m.watchDrops.WithLabelValues(reason)
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.watches, m.watchDrops} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("server: register metrics: %w", err)
		}
	}
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return m, nil
}

// observe records one finished request. Watches only count: their
// duration is how long the client watched, not a latency.
func (m *metrics) observe(verb, resource string, code int, start time.Time) {
	m.requests.WithLabelValues(verb, resource, strconv.Itoa(code)).Inc()
	if verb != "watch" {
		m.duration.WithLabelValues(verb, resource).Observe(time.Since(start).Seconds())
	}
}

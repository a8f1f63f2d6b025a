package gateway

import (
	"encoding/json"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
)

// metrics are the handler's Prometheus collectors.
type metrics struct {
	// deliveries counts deliveries by gateway type and outcome (outcomeOf).
	deliveries *prometheus.CounterVec
	// ignored counts the deliveries of event types (or pull_request
	// actions) a Gateway does not map, by gateway type and event type.
	ignored *prometheus.CounterVec
	// repeated counts deliveries received again.
	repeated *prometheus.CounterVec
}

// newMetrics builds the collectors and registers them with r (none when
// nil). Errors: a collector already registered there.
func newMetrics(r prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_gateway_deliveries_total",
			Help: "Webhook deliveries received by Gateways, by gateway type and outcome (created, repeated, ping, ignored, " +
				"unsubscribed, or the error's reason)."}, []string{"type", "outcome"}),
		ignored: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_gateway_ignored_total",
			Help: "Verified deliveries of an event type or action a Gateway does not map, answered 200 and dropped."},
			[]string{"type", "event"}),
		repeated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cairn_gateway_repeated_total",
			Help: "Deliveries received again whose Events already exist (nothing created)."}, []string{"type"}),
	}
	if r == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.deliveries, m.ignored, m.repeated} {
		if err := r.Register(c); err != nil {
			return nil, errors.Join(errors.New("gateway: register metrics"), err)
		}
	}
	return m, nil
}

// outcomeOf names what became of a delivery for the deliveries metric:
// the Result's outcome, or the error's reason.
func outcomeOf(res *Result, err error) string {
	if err != nil {
		return string(api.AsStatus(err).Reason)
	}
	return res.Outcome
}

// jsonValid reports whether body is one JSON value.
func jsonValid(body []byte) bool { return json.Valid(body) }

package server

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
)

// Defaults of the limits in Options.
const (
	DefaultMaxRequestsInflight = 400
	DefaultMaxWatches          = 1000
	DefaultWriteTimeout        = 30 * time.Second
)

// limitDefaults fills in the limits of opts left at zero.
func limitDefaults(opts Options) Options {
	if opts.MaxRequestsInflight == 0 {
		opts.MaxRequestsInflight = DefaultMaxRequestsInflight
	}
	if opts.MaxWatches == 0 {
		opts.MaxWatches = DefaultMaxWatches
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	return opts
}

// class is what a request counts against: the cap on ordinary requests or
// the one on long-running responses (watches, followed logs).
type class int

const (
	classRequest class = iota
	classLongRunning
	classes
)

func (c class) String() string {
	if c == classLongRunning {
		return "watch"
	}
	return "request"
}

// inflight caps the requests served at once, ordinary and long-running
// ones each against their own cap (0: none), and counts them for metrics.
type inflight struct {
	max      [classes]int64
	n        [classes]atomic.Int64
	rejected *prometheus.CounterVec
}

// newInflight builds the limiter for opts (whose caps are defaulted:
// negative means none) and registers its metrics.
func newInflight(opts Options, reg prometheus.Registerer) (*inflight, error) {
	l := &inflight{max: [classes]int64{int64(max(opts.MaxRequestsInflight, 0)), int64(max(opts.MaxWatches, 0))}}
	l.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cairn_http_inflight_rejections_total",
		Help: "Requests refused with 429 because the cap on requests in flight (class=request: --max-requests-inflight) or on open watches (class=watch: --max-watches) was reached.",
	}, []string{"class"})
	cs := []prometheus.Collector{l.rejected}
	for c := range classes {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "cairn_http_inflight_requests",
			Help:        "Requests being served: class=request for ordinary ones, class=watch for watches and other long-running responses.",
			ConstLabels: prometheus.Labels{"class": c.String()},
		}, func() float64 { return float64(l.n[c].Load()) }))
		l.rejected.WithLabelValues(c.String()) // export 0 before the first rejection
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// slot is the place a request holds in the limiter, found in its context.
type slot struct {
	l     *inflight
	class class
	held  bool
}

type slotKey struct{}

// acquire takes a place of class c; false when the cap is reached.
func (l *inflight) acquire(c class) bool {
	if n := l.n[c].Add(1); l.max[c] > 0 && n > l.max[c] {
		l.n[c].Add(-1)
		l.rejected.WithLabelValues(c.String()).Inc()
		return false
	}
	return true
}

// tooMany is the error of a request refused at the cap of class c.
func (l *inflight) tooMany(c class) error {
	var st *api.Status
	if c == classLongRunning {
		st = api.NewStatus(api.ReasonTooManyRequests,
			"the server has its maximum of %d watches and other long-running requests open (--max-watches): retry later", l.max[c])
	} else {
		st = api.NewStatus(api.ReasonTooManyRequests,
			"the server is serving its maximum of %d requests at once (--max-requests-inflight): retry later", l.max[c])
	}
	st.Details = &api.StatusDetails{RetryAfterSeconds: 1}
	return st
}

// admit takes a place for r (a watch counts as long-running from the
// start) and returns r with its slot in the context and the function that
// gives the place back. Over the cap it answers 429 and returns false.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, watch bool) (*http.Request, func(), bool) {
	c := classRequest
	if watch {
		c = classLongRunning
	}
	if !s.inflight.acquire(c) {
		s.writeError(w, r, s.inflight.tooMany(c))
		return r, nil, false
	}
	sl := &slot{l: s.inflight, class: c, held: true}
	release := func() {
		if sl.held {
			sl.l.n[sl.class].Add(-1)
			sl.held = false
		}
	}
	return r.WithContext(context.WithValue(r.Context(), slotKey{}, sl)), release, true
}

// longRunning moves r's place to the long-running class, as its response
// turns into a stream. Errors: TooManyRequests at the cap on long-running
// responses (r keeps its ordinary place until it ends).
func (s *Server) longRunning(r *http.Request) error {
	sl, _ := r.Context().Value(slotKey{}).(*slot)
	if sl == nil || !sl.held || sl.class == classLongRunning {
		return nil
	}
	if !sl.l.acquire(classLongRunning) {
		return sl.l.tooMany(classLongRunning)
	}
	sl.l.n[sl.class].Add(-1)
	sl.class = classLongRunning
	return nil
}

// armDeadline gives the write about to start at least three quarters of
// the write timeout (and at most all of it) to reach the client: past its
// deadline a write fails and the connection is closed, so that a client
// that stops reading holds the server's goroutine and buffers for a
// bounded time. The deadline is renewed only when a quarter of the
// timeout has passed since it was last set, not at every write. net/http
// clears it when the request ends.
func (w *statusWriter) armDeadline() {
	if w.writeTimeout <= 0 {
		return
	}
	now := time.Now()
	if now.Before(w.renewAt) {
		return
	}
	w.renewAt = now.Add(w.writeTimeout / 4)
	_ = http.NewResponseController(w.ResponseWriter).SetWriteDeadline(now.Add(w.writeTimeout)) // unsupported by test recorders: no deadline
}

package lease_test

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/lease"
	"cairn.dev/cairn/server/servertest"
)

// hangingTransport passes requests through until hang is set; then every
// new request hangs until its context ends, as a partitioned network does.
// With slowWrites set, the answers to writes reach the client that much
// later (the server has written already). It counts the requests the server answered.
type hangingTransport struct {
	base       http.RoundTripper
	hang       atomic.Bool
	slowWrites atomic.Int64 // nanoseconds
	answered   atomic.Int64
}

func (h *hangingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !h.hang.Load() {
		resp, err := h.base.RoundTrip(r)
		if err == nil {
			h.answered.Add(1)
		}
		if d := time.Duration(h.slowWrites.Load()); d > 0 && err == nil && r.Method != http.MethodGet {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				resp.Body.Close()
				return nil, r.Context().Err()
			}
		}
		return resp, err
	}
	if r.Body != nil {
		r.Body.Close()
	}
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// newClient returns an HTTP client of s whose network can be made to hang.
func newClient(t *testing.T, s *servertest.Server) (client.Interface, *hangingTransport) {
	t.Helper()
	tr := &hangingTransport{base: s.Transport()}
	c, err := client.NewHTTP(client.Config{Server: s.URL, Token: s.Token, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	return c, tr
}

// period is one term as seen by a lead function.
type period struct {
	who         string
	start, stop time.Time // stop is zero while leading
}

// terms records the lead periods of every candidate of one election.
type terms struct {
	mu      sync.Mutex
	periods []period
}

// lead returns a lead function for who that leads until its context ends,
// or returns at once when failing is set.
func (r *terms) lead(who string, failing bool) func(ctx context.Context) {
	return func(ctx context.Context) {
		r.mu.Lock()
		i := len(r.periods)
		r.periods = append(r.periods, period{who: who, start: time.Now()})
		r.mu.Unlock()
		if !failing {
			<-ctx.Done()
		}
		r.mu.Lock()
		r.periods[i].stop = time.Now()
		r.mu.Unlock()
	}
}

// snapshot returns the periods so far, in start order.
func (r *terms) snapshot() []period {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.periods)
}

// leader returns who is leading now, or "".
func (r *terms) leader() string {
	for _, p := range r.snapshot() {
		if p.stop.IsZero() {
			return p.who
		}
	}
	return ""
}

// count returns how many terms who has started.
func (r *terms) count(who string) int {
	n := 0
	for _, p := range r.snapshot() {
		if p.who == who {
			n++
		}
	}
	return n
}

// assertNoOverlap fails the test when a term started before the previous
// one stopped.
func (r *terms) assertNoOverlap(t *testing.T) {
	t.Helper()
	ps := r.snapshot()
	for i := 1; i < len(ps); i++ {
		prev, cur := ps[i-1], ps[i]
		if prev.stop.IsZero() || cur.start.Before(prev.stop) {
			t.Errorf("terms overlap: %s led from %v, %s started %v before it stopped (stop %v)",
				prev.who, prev.start.Format(time.StampMicro), cur.who,
				prev.stop.Sub(cur.start), prev.stop.Format(time.StampMicro))
		}
	}
}

// candidate is one lease.Run in the background.
type candidate struct {
	identity string
	net      *hangingTransport
	cancel   context.CancelFunc
	done     chan error
	once     sync.Once
	err      error
}

// run starts a candidate named who for the election in opts (Name
// defaults to "controllers"; Identity is set from who) over its own HTTP
// client. It stops at test cleanup.
func run(t *testing.T, s *servertest.Server, opts lease.Options, who string, lead func(ctx context.Context)) *candidate {
	t.Helper()
	c, tr := newClient(t, s)
	if opts.Name == "" {
		opts.Name = "controllers"
	}
	opts.Identity = "http://" + who + ".test:7070"
	opts.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})).With("who", who)
	ctx, cancel := context.WithCancel(context.Background())
	cand := &candidate{identity: opts.Identity, net: tr, cancel: cancel, done: make(chan error, 1)}
	go func() { cand.done <- lease.Run(ctx, c, opts, func(ctx context.Context, _ api.Fence) { lead(ctx) }) }()
	t.Cleanup(func() {
		if err := cand.stop(t); err != nil {
			t.Errorf("%s: Run: %v", who, err)
		}
	})
	return cand
}

// stop cancels the candidate's context and waits for Run to return.
func (c *candidate) stop(t *testing.T) error {
	c.once.Do(func() {
		c.cancel()
		select {
		case c.err = <-c.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: Run did not return after its context ended", c.identity)
		}
	})
	return c.err
}

// running reports whether Run has not returned yet.
func (c *candidate) running() bool { return len(c.done) == 0 }

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// awaitRequests waits until the server has answered n more of c's
// requests than when it was called. A candidate that is not leading sends
// at most one request per half RetryPeriod, so n requests prove it looked
// at the Lease n times over at least n-1 half retry periods.
func (c *candidate) awaitRequests(t *testing.T, n int64, what string) {
	t.Helper()
	want := c.net.answered.Load() + n
	testkit.Eventually(t, 60*time.Second, what, func() bool { return c.net.answered.Load() >= want })
}

// looks is how many requests a candidate that is not leading sends over at
// least d: one per half RetryPeriod.
func looks(opts lease.Options, d time.Duration) int64 { return int64(2*d/opts.RetryPeriod) + 1 }

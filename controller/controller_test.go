package controller_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"

	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/internal/testkit"
)

// Tests that show that something does not happen (no retry, no requeue)
// run in a synctest bubble: the work queue's delays run on the bubble's
// fake clock, so a test can let hours pass in no time and then count, and
// delays are exact.

// quiet is how long a test lets pass, on the fake clock, to show that
// nothing more happens: far beyond every backoff and delay it configures.
const quiet = time.Hour

// start runs c until the test ends and fails the test if Run does not
// return after cancellation.
func start(t *testing.T, c *controller.Controller) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return after cancel")
		}
	})
	return cancel
}

// recorder is a Reconciler that records the time of every call and answers
// with the function given. In a synctest bubble, build it inside the
// bubble.
type recorder struct {
	mu    sync.Mutex
	calls []time.Time
	fn    func(n int) (controller.Result, error) // n: 1-based call number
	ch    chan int
}

func newRecorder(fn func(n int) (controller.Result, error)) *recorder {
	return &recorder{fn: fn, ch: make(chan int, 100)}
}

func (r *recorder) Reconcile(_ context.Context, _ string) (controller.Result, error) {
	r.mu.Lock()
	r.calls = append(r.calls, time.Now())
	n := len(r.calls)
	r.mu.Unlock()
	res, err := r.fn(n)
	r.ch <- n
	return res, err
}

// waitCalls waits until the reconciler has been called n times.
func (r *recorder) waitCalls(t *testing.T, n int) []time.Time {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		got := len(r.calls)
		calls := append([]time.Time(nil), r.calls...)
		r.mu.Unlock()
		if got >= n {
			return calls
		}
		select {
		case <-r.ch:
		case <-timeout:
			t.Fatalf("reconciled %d times, want %d", got, n)
		}
	}
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

func TestController_RetriesWithBackoffUntilSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const base = 20 * time.Millisecond
		limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, time.Second)
		r := newRecorder(func(n int) (controller.Result, error) {
			if n <= 3 {
				return controller.Result{}, fmt.Errorf("attempt %d failed", n)
			}
			return controller.Result{}, nil
		})
		c := controller.New("retry", r, controller.Options{RateLimiter: limiter})
		c.Enqueue("ns/a")
		start(t, c)

		calls := r.waitCalls(t, 4)
		// The backoff doubles: base, 2*base, 4*base between attempts (exact
		// on the fake clock).
		for i := 1; i < 4; i++ {
			gap := calls[i].Sub(calls[i-1])
			if want := base << (i - 1); gap != want {
				t.Errorf("gap before attempt %d = %v, want %v", i+1, gap, want)
			}
		}
		// Success forgets the failure history, and nothing is retried after
		// it. Wait for the worker to be done with the fourth call first: it
		// forgets after Reconcile returns.
		synctest.Wait()
		if n := limiter.NumRequeues("ns/a"); n != 0 {
			t.Errorf("NumRequeues after success = %d, want 0 (Forget not called)", n)
		}
		time.Sleep(quiet)
		synctest.Wait()
		if n := r.count(); n != 4 {
			t.Errorf("reconciled %d times, want 4 (no retry after success)", n)
		}
	})
}

func TestController_RequeueAfterReconcilesAgainAfterDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const delay = 150 * time.Millisecond
		r := newRecorder(func(n int) (controller.Result, error) {
			if n == 1 {
				return controller.Result{RequeueAfter: delay}, nil
			}
			return controller.Result{}, nil
		})
		c := controller.New("requeue", r, controller.Options{})
		c.Enqueue("a")
		start(t, c)

		calls := r.waitCalls(t, 2)
		if gap := calls[1].Sub(calls[0]); gap != delay {
			t.Errorf("requeued after %v, want %v", gap, delay)
		}
		time.Sleep(quiet)
		synctest.Wait()
		if n := r.count(); n != 2 {
			t.Errorf("reconciled %d times, want 2 (Result{} must not requeue)", n)
		}
	})
}

func TestController_TerminalErrorIsNotRetried(t *testing.T) {
	boom := errors.New("spec is invalid")
	tests := []struct {
		name string
		err  error
	}{
		{"terminal", controller.Terminal(boom)},
		{"wrapped terminal", fmt.Errorf("reconcile x: %w", controller.Terminal(boom))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !controller.IsTerminal(tt.err) || !errors.Is(tt.err, boom) {
				t.Fatalf("IsTerminal=%v errors.Is=%v, want both true", controller.IsTerminal(tt.err), errors.Is(tt.err, boom))
			}
			synctest.Test(t, func(t *testing.T) {
				limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond)
				r := newRecorder(func(int) (controller.Result, error) { return controller.Result{}, tt.err })
				c := controller.New("terminal", r, controller.Options{RateLimiter: limiter})
				c.Enqueue("a")
				start(t, c)

				r.waitCalls(t, 1)
				time.Sleep(quiet) // many backoff periods
				synctest.Wait()
				if n := r.count(); n != 1 {
					t.Fatalf("reconciled %d times, want 1 (terminal errors are not retried)", n)
				}
				if n := limiter.NumRequeues("a"); n != 0 {
					t.Errorf("NumRequeues = %d, want 0", n)
				}
				// A new event still reconciles the key.
				c.Enqueue("a")
				r.waitCalls(t, 2)
			})
		})
	}
	if controller.IsTerminal(boom) || controller.Terminal(nil) != nil {
		t.Errorf("plain error reported terminal, or Terminal(nil) != nil")
	}
}

func TestController_NeverReconcilesOneKeyConcurrently(t *testing.T) {
	keys := []string{"a", "b", "c", "d"}
	var (
		inFlight    = map[string]*atomic.Int32{}
		overlaps    atomic.Int32
		total       atomic.Int32
		maxParallel atomic.Int32
		calls       atomic.Int32
	)
	for _, k := range keys {
		inFlight[k] = &atomic.Int32{}
	}
	r := controller.ReconcilerFunc(func(_ context.Context, key string) (controller.Result, error) {
		if inFlight[key].Add(1) > 1 {
			overlaps.Add(1)
		}
		n := total.Add(1)
		for {
			m := maxParallel.Load()
			if n <= m || maxParallel.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond) // widen the window for an overlap
		total.Add(-1)
		inFlight[key].Add(-1)
		calls.Add(1)
		return controller.Result{}, nil
	})
	c := controller.New("serial", r, controller.Options{Workers: 4})
	start(t, c)

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range 200 {
				c.Enqueue(keys[i%len(keys)])
				if i%20 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	testkit.Eventually(t, 10*time.Second, "the queue to drain", func() bool { return c.Len() == 0 && total.Load() == 0 })
	if n := overlaps.Load(); n != 0 {
		t.Errorf("a key was reconciled by two workers at once %d times", n)
	}
	if calls.Load() < int32(len(keys)) {
		t.Errorf("only %d reconciles, want >= %d", calls.Load(), len(keys))
	}
	if maxParallel.Load() < 2 {
		t.Errorf("at most %d reconciles ran at once with 4 workers, want >= 2", maxParallel.Load())
	}
}

func TestController_RunReturnsOnCancelAfterWorkersFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered := make(chan struct{})
		cleanup := make(chan struct{}) // closed by the test: the reconcile's cleanup is over
		r := controller.ReconcilerFunc(func(ctx context.Context, _ string) (controller.Result, error) {
			close(entered)
			<-ctx.Done()
			<-cleanup // cleanup after cancellation, for as long as the test says
			return controller.Result{}, ctx.Err()
		})
		c := controller.New("cancel", r, controller.Options{Workers: 2})
		c.Enqueue("a")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		<-entered
		cancel()
		synctest.Wait() // Run has seen the cancellation and is as far as it gets
		select {
		case err := <-done:
			t.Fatalf("Run returned (%v) while a reconcile was still cleaning up", err)
		default:
		}
		close(cleanup)
		if err := <-done; err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		c.Enqueue("b")
		if n := c.Len(); n != 0 {
			t.Errorf("Len after stop = %d, want 0 (adds ignored after shutdown)", n)
		}
		if err := c.Run(context.Background()); err == nil {
			t.Error("second Run succeeded, want an error")
		}
	})
}

func TestController_PanicIsRetried(t *testing.T) {
	limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond)
	r := newRecorder(func(n int) (controller.Result, error) {
		if n == 1 {
			panic("bad object")
		}
		return controller.Result{}, nil
	})
	c := controller.New("panic", r, controller.Options{RateLimiter: limiter})
	c.Enqueue("a")
	start(t, c)
	r.waitCalls(t, 2)
}

func TestController_MetricsReportQueueDepthPerController(t *testing.T) {
	reg := prometheus.NewRegistry()
	nop := controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) {
		return controller.Result{}, nil
	})
	a := controller.New("alpha", nop, controller.Options{Metrics: reg})
	b := controller.New("beta", nop, controller.Options{Metrics: reg})
	for _, k := range []string{"x", "y", "z", "x"} {
		a.Enqueue(k)
	}
	b.Enqueue("x")
	t.Cleanup(func() { // release the queues' goroutines
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = a.Run(ctx)
		_ = b.Run(ctx)
	})

	want := map[string]float64{"alpha": 3, "beta": 1}
	got := map[string]float64{}
	adds := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" {
					name = l.GetValue()
				}
			}
			switch mf.GetName() {
			case "cairn_workqueue_depth":
				got[name] = m.GetGauge().GetValue()
			case "cairn_workqueue_adds_total":
				adds[name] = m.GetCounter().GetValue()
			}
		}
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("cairn_workqueue_depth{name=%q} = %v, want %v", name, got[name], w)
		}
		if adds[name] != w {
			t.Errorf("cairn_workqueue_adds_total{name=%q} = %v, want %v", name, adds[name], w)
		}
	}
}

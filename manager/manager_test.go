package manager_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/lease"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/server/servertest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// terms records the leadership terms of several managers: who ran when.
type terms struct {
	mu      sync.Mutex
	running map[string]bool
	overlap bool
	started map[string]int
}

func newTerms() *terms { return &terms{running: map[string]bool{}, started: map[string]int{}} }

// controller returns a controller for manager id whose runnable records
// its term and, when fail is set, fails once it has run for a moment.
func (tr *terms) controller(id string, fail *atomic.Bool) manager.Controller {
	return manager.Controller{Name: "probe", Setup: func(t *manager.Term) error {
		if t.Client == nil || t.Informers == nil || t.Traces == nil || t.Logger == nil {
			return errors.New("term is missing a shared piece")
		}
		t.Add("probe", manager.RunnableFunc(func(ctx context.Context) error {
			tr.mu.Lock()
			for other, on := range tr.running {
				if on && other != id {
					tr.overlap = true
				}
			}
			tr.running[id] = true
			tr.started[id]++
			tr.mu.Unlock()
			defer func() {
				tr.mu.Lock()
				tr.running[id] = false
				tr.mu.Unlock()
			}()
			if fail != nil && fail.Load() {
				select {
				case <-time.After(200 * time.Millisecond):
					return errors.New("probe failed")
				case <-ctx.Done():
					return nil
				}
			}
			<-ctx.Done()
			return nil
		}))
		return nil
	}}
}

func (tr *terms) leader() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for id, on := range tr.running {
		if on {
			return id
		}
	}
	return ""
}

func startManager(t *testing.T, m *manager.Manager) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func TestManager_OneOfTwoRunsTheControllers_TheOtherTakesOverWhenItStops(t *testing.T) {
	srv := servertest.Start(t)
	tr := newTerms()
	stops := map[string]func(){}
	for _, id := range []string{"http://a", "http://b"} {
		m, err := manager.New(manager.Options{Client: srv.Client(t), Identity: id, LeaderElection: true,
			LeaseDuration: 2 * time.Second, Logger: quiet(), Controllers: []manager.Controller{tr.controller(id, nil)}})
		if err != nil {
			t.Fatal(err)
		}
		stops[id] = startManager(t, m)
	}
	var first string
	testkit.Eventually(t, 20*time.Second, "a manager runs the controllers", func() bool {
		first = tr.leader()
		return first != ""
	})
	holder, err := lease.Current(context.Background(), srv.Client(t), manager.LeaseName)
	if err != nil || holder != first {
		t.Fatalf("lease holder %q (%v), want the running manager %s", holder, err, first)
	}
	stops[first]()
	testkit.Eventually(t, 20*time.Second, "the other manager takes over", func() bool {
		l := tr.leader()
		return l != "" && l != first
	})
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.overlap {
		t.Fatal("two managers ran the controllers at the same time")
	}
}

func TestManager_FailingControllerEndsTheTerm_AnotherManagerTakesOver(t *testing.T) {
	srv := servertest.Start(t)
	tr := newTerms()
	var failA atomic.Bool
	failA.Store(true)
	regA := prometheus.NewRegistry()
	a, err := manager.New(manager.Options{Client: srv.Client(t), Identity: "http://a", LeaderElection: true,
		LeaseDuration: 2 * time.Second, Logger: quiet(), Metrics: regA,
		Controllers: []manager.Controller{tr.controller("http://a", &failA)}})
	if err != nil {
		t.Fatal(err)
	}
	startManager(t, a)
	testkit.Eventually(t, 20*time.Second, "manager a leads", func() bool { return tr.leader() == "http://a" })
	b, err := manager.New(manager.Options{Client: srv.Client(t), Identity: "http://b", LeaderElection: true,
		LeaseDuration: 2 * time.Second, Logger: quiet(), Controllers: []manager.Controller{tr.controller("http://b", nil)}})
	if err != nil {
		t.Fatal(err)
	}
	startManager(t, b)
	testkit.Eventually(t, 20*time.Second, "manager b takes over after a's controller failed", func() bool {
		return tr.leader() == "http://b"
	})
	if n := failedTerms(t, regA); n < 1 {
		t.Fatalf("cairn_manager_terms_total{result=failed} = %v on the failing manager, want ≥ 1", n)
	}
	if a.Leading() {
		t.Fatal("manager a still reports leading after its term failed and b took over")
	}
}

func TestManager_SetupErrorEndsTheTermAndIsRetried(t *testing.T) {
	srv := servertest.Start(t)
	var setups atomic.Int32
	m, err := manager.New(manager.Options{Client: srv.Client(t), Logger: quiet(), RestartBackoff: 50 * time.Millisecond,
		Controllers: []manager.Controller{{Name: "broken", Setup: func(*manager.Term) error {
			setups.Add(1)
			return errors.New("cannot set up")
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	startManager(t, m)
	testkit.Eventually(t, 10*time.Second, "the failed setup is tried again", func() bool { return setups.Load() >= 3 })
}

func TestManager_ControllersShareOneInformerPerKind(t *testing.T) {
	srv := servertest.Start(t)
	got := make(chan [2]any, 2)
	share := func(name string) manager.Controller {
		return manager.Controller{Name: name, Setup: func(t *manager.Term) error {
			got <- [2]any{t.Informers, t.Informers.For(api.KindSecret)}
			return nil
		}}
	}
	m, err := manager.New(manager.Options{Client: srv.Client(t), Logger: quiet(),
		Controllers: []manager.Controller{share("one"), share("two")}})
	if err != nil {
		t.Fatal(err)
	}
	startManager(t, m)
	a, b := <-got, <-got
	if a[0] != b[0] || a[1] != b[1] {
		t.Fatal("two controllers of one term got different informer factories or informers for one kind")
	}
}

func TestManager_NewRejectsMissingPieces(t *testing.T) {
	srv := servertest.Start(t)
	for _, tc := range []struct {
		name string
		opts manager.Options
	}{
		{"no client", manager.Options{}},
		{"election without identity", manager.Options{Client: srv.Client(t), LeaderElection: true}},
	} {
		if _, err := manager.New(tc.opts); err == nil {
			t.Errorf("%s: New accepted it", tc.name)
		}
	}
}

// failedTerms reads cairn_manager_terms_total{result="failed"} from reg.
func failedTerms(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	return termsEnded(t, reg, "failed")
}

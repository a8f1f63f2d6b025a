package manager_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/server/servertest"
)

// warm records what one manager's controller with a standby part saw.
type warm struct {
	mu       sync.Mutex
	seen     map[string]bool // Secrets seen by the process-wide handler
	running  bool            // the standby runnable runs
	writeErr error           // what a write through the standby client got
	atSetup  []int           // cached Secrets when each term's Setup ran
}

func (w *warm) controller() manager.Controller {
	w.seen = map[string]bool{}
	return manager.Controller{Name: "warm", Standby: func(p *manager.Process) (func(*manager.Term) error, error) {
		p.Informers.For(api.KindSecret).AddEventHandler(informer.Handler{OnAdd: func(o *api.Object) {
			w.mu.Lock()
			w.seen[o.Name] = true
			w.mu.Unlock()
		}})
		p.Add("warm", manager.RunnableFunc(func(ctx context.Context) error {
			_, err := p.Client.Create(ctx, testkit.Secret("default", "from-standby", nil))
			w.mu.Lock()
			w.running, w.writeErr = true, err
			w.mu.Unlock()
			<-ctx.Done()
			return nil
		}))
		return func(t *manager.Term) error {
			inf := t.Informers.For(api.KindSecret)
			w.mu.Lock()
			w.atSetup = append(w.atSetup, inf.Len())
			w.mu.Unlock()
			return nil
		}, nil
	}}
}

func (w *warm) saw(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[name]
}

func TestManager_StandbyPartStaysCurrentWhileWaitingAndEachTermStartsWarm(t *testing.T) {
	srv := servertest.Start(t)
	c := srv.Client(t)
	for _, name := range []string{"one", "two"} {
		if _, err := c.Create(context.Background(), testkit.Secret("default", name, nil)); err != nil {
			t.Fatal(err)
		}
	}
	var wa, wb warm
	a, err := manager.New(manager.Options{Client: srv.Client(t), Identity: "http://a", LeaderElection: true,
		LeaseDuration: 2 * time.Second, Logger: quiet(), Controllers: []manager.Controller{wa.controller()}})
	if err != nil {
		t.Fatal(err)
	}
	stopA := startManager(t, a)
	testkit.Eventually(t, 20*time.Second, "a leads", a.Leading)
	b, err := manager.New(manager.Options{Client: srv.Client(t), Identity: "http://b", LeaderElection: true,
		LeaseDuration: 2 * time.Second, Logger: quiet(), Controllers: []manager.Controller{wb.controller()}})
	if err != nil {
		t.Fatal(err)
	}
	startManager(t, b)

	// b waits, and its standby part runs and stays current meanwhile.
	testkit.Eventually(t, 20*time.Second, "b's standby part to see the Secrets", func() bool {
		return wb.saw("one") && wb.saw("two")
	})
	if _, err := c.Create(context.Background(), testkit.Secret("default", "three", nil)); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 20*time.Second, "b's standby part to see a new Secret", func() bool { return wb.saw("three") })
	wb.mu.Lock()
	running, werr, terms := wb.running, wb.writeErr, len(wb.atSetup)
	wb.mu.Unlock()
	if !running || b.Leading() || terms != 0 {
		t.Fatalf("b: standby running %v, leading %v, terms %d; want a running standby part and no term", running, b.Leading(), terms)
	}
	if !errors.Is(werr, api.ErrForbidden) {
		t.Fatalf("a write through the standby client: %v, want Forbidden", werr)
	}

	// a stops: b's term finds its informers current at once.
	stopA()
	testkit.Eventually(t, 20*time.Second, "b's term to start", func() bool {
		wb.mu.Lock()
		defer wb.mu.Unlock()
		return len(wb.atSetup) > 0
	})
	wb.mu.Lock()
	defer wb.mu.Unlock()
	if len(wb.atSetup) != 1 || wb.atSetup[0] < 3 {
		t.Fatalf("b's term saw %v cached Secrets at its Setup, want the 3 (and more) its informer held already", wb.atSetup)
	}
}

func TestManager_FailingStandbyPartEndsRun(t *testing.T) {
	srv := servertest.Start(t)
	m, err := manager.New(manager.Options{Client: srv.Client(t), Logger: quiet(),
		Controllers: []manager.Controller{{Name: "broken", Standby: func(p *manager.Process) (func(*manager.Term) error, error) {
			p.Add("graph", manager.RunnableFunc(func(context.Context) error { return errors.New("cannot keep up") }))
			return func(*manager.Term) error { return nil }, nil
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(context.Background()) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "standby part graph: cannot keep up") {
			t.Fatalf("Run = %v, want the standby part's failure", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after a standby part failed")
	}
}

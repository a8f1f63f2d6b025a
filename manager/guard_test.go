package manager_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/runtime"
	rtlocal "cairn.dev/cairn/runtime/local"
	"cairn.dev/cairn/server/servertest"
)

// A term's Runtime starts units while the term is valid, and refuses
// (ErrTermEnded, nothing started) once the term is no longer valid by the
// process's own clock, even through a context that was never cancelled:
// a process resumed after a pause starts nothing.
func TestManager_TermRuntimeStartsNothingOnceTheTermExpired(t *testing.T) {
	srv := servertest.Start(t)
	testkit.UnitReachable(t)
	rt, err := rtlocal.New(rtlocal.Options{Root: filepath.Join(t.TempDir(), "runtime"), Logger: quiet(),
		Isolation: rtlocal.Isolation{None: os.Geteuid() != 0}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	type term struct {
		ctx context.Context
		rt  runtime.Runtime
	}
	terms := make(chan term, 1)
	ctrl := manager.Controller{Name: "starter", Setup: func(tm *manager.Term) error {
		tm.Add("starter", manager.RunnableFunc(func(ctx context.Context) error {
			select {
			case terms <- term{ctx, tm.Runtime}:
			default:
			}
			<-ctx.Done()
			return nil
		}))
		return nil
	}}
	m, err := manager.New(manager.Options{Client: srv.Client(t), Identity: "http://a", LeaderElection: true,
		LeaseDuration: 3 * time.Second, Logger: quiet(), Runtime: rt, Controllers: []manager.Controller{ctrl}})
	if err != nil {
		t.Fatal(err)
	}
	stop := startManager(t, m)
	got := <-terms
	spec := func(id string) runtime.Spec { return runtime.Spec{ID: id, Argv: []string{"/bin/sh", "-c", "true"}} }
	if _, err := got.rt.Start(got.ctx, spec("while-valid")); err != nil && got.ctx.Err() == nil {
		t.Fatalf("start while the term is valid: %v", err)
	}
	stale := context.WithoutCancel(got.ctx) // as a paused leader still holds it
	stop()                                  // no renewal from now on
	testkit.Eventually(t, 30*time.Second, "the term to expire by the local clock", func() bool { return manager.Valid(stale) != nil })
	_, err = got.rt.Start(stale, spec("after-expiry"))
	if !errors.Is(err, manager.ErrTermEnded) {
		t.Fatalf("start after the term expired: %v, want ErrTermEnded", err)
	}
	if _, err := rt.State(context.Background(), "after-expiry"); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("the runtime has the unit started after the term expired (%v)", err)
	}
}

package cleaner_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cleaner"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

// batches is the env's in-process client, recording the status batches
// the controller writes through it; before, when set, runs before each
// batch is written (and may make one of its writes stale).
type batches struct {
	client.Interface
	mu      sync.Mutex
	results [][]client.StatusResult
	objs    [][]*api.Object
	before  func(objs []*api.Object)
}

func (b *batches) UpdateStatuses(ctx context.Context, objs []*api.Object) []client.StatusResult {
	b.mu.Lock()
	before := b.before
	b.mu.Unlock()
	if before != nil {
		before(objs)
	}
	res := client.UpdateStatuses(ctx, b.Interface, objs)
	b.mu.Lock()
	b.results, b.objs = append(b.results, res), append(b.objs, objs)
	b.mu.Unlock()
	return res
}

// largest is the size of the largest batch written so far.
func (b *batches) largest() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, r := range b.results {
		n = max(n, len(r))
	}
	return n
}

// dueCleaners creates n Cleaners "due-0".. whose TTL has passed, each
// evaluating Secret s (labelled open: their condition is false).
func (e *env) dueCleaners(n int) {
	e.t.Helper()
	e.secret("s", testkit.Labels("preview", "open"))
	for i := range n {
		e.createCleaner(fmt.Sprintf("due-%d", i), api.CleanerSpec{Targets: []api.CleanerTarget{secretTarget("s", "s", false)},
			Conditions: []string{closed}})
	}
}

// pendingAndScheduled checks that every one of the n due Cleaners is
// Pending after one false evaluation, and scheduled exactly when its
// status says.
func pendingAndScheduled(t *testing.T, e *env, r *running, n int) {
	t.Helper()
	for i := range n {
		name := fmt.Sprintf("due-%d", i)
		c := e.waitPhase(name, api.CleanerPending)
		if !afterPeriod(c.Status.LastEvaluation, c.Status.NextScheduledEvaluation) || len(c.Status.LastEvaluation.Results) != 1 {
			t.Fatalf("%s: status %+v, want one false evaluation and the next a period later", name, c.Status)
		}
		testkit.EventuallyNil(t, wait, name+" scheduled as its status says", func() error {
			if at, ok := r.ctl.Schedule().When(ns + "/" + name); !ok || !at.Equal(*c.Status.NextScheduledEvaluation) {
				return fmt.Errorf("scheduled at %s (%v), status says %s", at, ok, c.Status.NextScheduledEvaluation)
			}
			return nil
		})
	}
}

func TestCleaner_StatusesOfCleanersDueTogetherAreCommittedTogether(t *testing.T) {
	e := newEnv(t)
	const n = 120
	e.dueCleaners(n)
	b := &batches{Interface: e.c}
	r := e.start(b)
	pendingAndScheduled(t, e, r, n)
	largest := b.largest()
	if largest < 2 {
		t.Fatalf("the largest batch held %d status: every write went alone", largest)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	writes := 0
	for i, res := range b.results {
		for j, w := range res {
			if w.Err != nil {
				t.Fatalf("write %d of batch %d (%s): %v", j, i, b.objs[i][j].Name, w.Err)
			}
			if w.Object.ResourceVersion != res[0].Object.ResourceVersion {
				t.Fatalf("batch %d committed at %s and %s: not one transaction", i, res[0].Object.ResourceVersion, w.Object.ResourceVersion)
			}
			writes++
		}
	}
	if writes != n || len(b.results) >= n {
		t.Fatalf("%d writes in %d batches for %d Cleaners", writes, len(b.results), n)
	}
	t.Logf("%d statuses in %d batches, the largest of %d", writes, len(b.results), largest)
}

func TestCleaner_ConflictOfOneStatusInABatchLosesNoneOfTheOthers(t *testing.T) {
	e := newEnv(t)
	const n = 60
	e.dueCleaners(n)
	b := &batches{Interface: e.c}
	var once sync.Once
	var stale string
	b.before = func(objs []*api.Object) {
		if len(objs) < 2 {
			return
		}
		// Someone else writes the first Cleaner of the first batch of
		// several between its evaluation and its status write.
		once.Do(func() {
			stale = objs[0].Name
			e.label(api.KindCleaner, stale, "touched", "yes")
		})
	}
	r := e.start(b)
	pendingAndScheduled(t, e, r, n)
	if stale == "" {
		t.Fatal("no batch of several writes: nothing was made stale")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, res := range b.results {
		if b.objs[i][0].Name != stale || len(res) < 2 {
			continue
		}
		for j, w := range res {
			switch name := b.objs[i][j].Name; {
			case name == stale && !errors.Is(w.Err, api.ErrConflict):
				t.Fatalf("the stale write of %s: %v, want Conflict", name, w.Err)
			case name != stale && w.Err != nil:
				t.Fatalf("write of %s failed with the stale one: %v", name, w.Err)
			}
		}
		if c, _ := e.getCleaner(stale); c.Labels["touched"] != "yes" {
			t.Fatalf("%s lost the other writer's label", stale)
		}
		return
	}
	t.Fatalf("the batch that held the stale write of %s was not recorded", stale)
}

func TestCleaner_StopMidBatchLeavesEveryStatusWholeAndTheNextControllerConverges(t *testing.T) {
	e := newEnv(t)
	const n = 150
	e.dueCleaners(n)
	b := &batches{Interface: e.c}
	var r1 *running
	started, stopped := make(chan struct{}), make(chan struct{})
	var once sync.Once
	b.before = func(objs []*api.Object) {
		// The controller stops while a batch is being written, once two
		// have been.
		b.mu.Lock()
		third := len(b.results) >= 2
		b.mu.Unlock()
		if third {
			once.Do(func() {
				<-started
				go func() {
					r1.stop()
					close(stopped)
				}()
				time.Sleep(10 * time.Millisecond)
			})
		}
	}
	r1 = e.start(b)
	close(started)
	select {
	case <-stopped:
	case <-time.After(wait):
		t.Fatal("the first controller did not stop")
	}
	written := map[string]bool{}
	for i := range n {
		c, err := e.getCleaner(fmt.Sprintf("due-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case c.Status.Phase == "":
		case c.Status.Phase == api.CleanerPending && afterPeriod(c.Status.LastEvaluation, c.Status.NextScheduledEvaluation):
			written[c.Name] = true
		default:
			t.Fatalf("%s after the stop: status %+v is neither unwritten nor whole", c.Name, c.Status)
		}
	}
	// Each batch, the one cut short included, is in the store whole or
	// not at all.
	b.mu.Lock()
	for i, objs := range b.objs {
		in := 0
		for _, o := range objs {
			if written[o.Name] {
				in++
			}
		}
		if in != 0 && in != len(objs) {
			t.Errorf("batch %d is half written: %d of its %d statuses", i, in, len(objs))
		}
	}
	b.mu.Unlock()
	if len(written) == n {
		t.Fatalf("every status was written before the stop: it did not land mid-way")
	}
	t.Logf("%d of %d statuses written when the first controller stopped", len(written), n)
	r2 := e.start(nil)
	pendingAndScheduled(t, e, r2, n)
}

// held is a client whose status writes wait until release is closed (or
// their context ends); writing reports a write waiting.
type held struct {
	client.Interface
	release chan struct{}
	writing chan struct{}
}

func (h *held) UpdateStatuses(ctx context.Context, objs []*api.Object) []client.StatusResult {
	select {
	case h.writing <- struct{}{}:
	default:
	}
	select {
	case <-h.release:
	case <-ctx.Done():
		out := make([]client.StatusResult, len(objs))
		for i := range out {
			out[i].Err = ctx.Err()
		}
		return out
	}
	return client.UpdateStatuses(ctx, h.Interface, objs)
}

func TestCleaner_EvaluatesAndDeletesWhileStatusWritesAreHeldUp(t *testing.T) {
	e := newEnv(t)
	const n = 80
	e.dueCleaners(n) // false: each yields a status to write
	e.secret("closed-one", testkit.Labels("preview", "closed"))
	e.createCleaner("acts", api.CleanerSpec{Targets: []api.CleanerTarget{secretTarget("s", "closed-one", true)},
		Conditions: []string{closed}})
	h := &held{Interface: e.c, release: make(chan struct{}), writing: make(chan struct{}, 1)}
	reg := prometheus.NewRegistry()
	r := e.startWith(h, cleaner.Options{}, reg)
	pending := func() float64 {
		got, err := gathered(reg)
		if err != nil {
			t.Fatal(err)
		}
		return got["cairn_cleaner_statuses_pending"]
	}
	select {
	case <-h.writing:
	case <-time.After(wait):
		t.Fatal("no status write was attempted")
	}
	// No status can be written, yet every Cleaner is evaluated: the false
	// ones scheduled a period ahead, the true one acted on.
	testkit.Eventually(t, wait, "the target and the Cleaner whose condition holds deleted", func() bool {
		return e.gone(api.KindSecret, "closed-one") && e.gone(api.KindCleaner, "acts")
	})
	testkit.EventuallyNil(t, wait, "every false Cleaner scheduled", func() error {
		for i := range n {
			at, ok := r.ctl.Schedule().When(fmt.Sprintf("%s/due-%d", ns, i))
			if !ok || time.Until(at) < time.Hour/2 {
				return fmt.Errorf("due-%d scheduled at %s (%v), want a period (1h) ahead", i, at, ok)
			}
		}
		return nil
	})
	for i := range n {
		if c, err := e.getCleaner(fmt.Sprintf("due-%d", i)); err != nil || c.Status.Phase != "" {
			t.Fatalf("due-%d: phase %q (%v) while every status write is held", i, c.Status.Phase, err)
		}
	}
	// (A reconcile schedules, then hands its status over.)
	testkit.Eventually(t, wait, fmt.Sprintf("cairn_cleaner_statuses_pending at least %d while the writes are held", n),
		func() bool { return pending() >= n })
	// Released, the statuses follow, each true to the schedule.
	close(h.release)
	pendingAndScheduled(t, e, r, n)
	testkit.Eventually(t, wait, "no status left pending", func() bool { return pending() == 0 })
}

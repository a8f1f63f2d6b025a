package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/conflict"
)

// errLost reports that the Lease is no longer this candidate's: another
// took it over, or it was deleted.
var errLost = errors.New("lease: taken by another candidate or deleted")

// elector is one candidate's state across its terms.
type elector struct {
	leases client.Typed[*api.Lease]
	opts   Options
	log    *slog.Logger

	// observed is the record this candidate last read while campaigning,
	// and observedAt when (monotonic clock) it first saw that record's
	// resourceVersion.
	observed   *api.Lease
	observedAt time.Time
	// failing is set while the API fails, to log a failure streak once.
	failing bool
}

// term is one period of holding the Lease.
type term struct {
	// rec is the record as last written (or confirmed) by this holder.
	rec *api.Lease
	// renewed is when the request of the last confirmed write started.
	renewed time.Time
}

// campaign tries to acquire the Lease until it succeeds (it returns the
// term) or ctx is done (it returns nil). It looks at the Lease every half
// RetryPeriod, and also the moment the holder it watches would have been
// silent for a full lease duration: it sees a renewal at most half a
// RetryPeriod after it was made, so a dead leader is replaced within the
// lease duration plus half a RetryPeriod of its last renewal.
//
// It reports success only for a term with time left to lead: an
// acquisition the store confirmed so late that less than a RetryPeriod of
// the renew deadline is left (the store was slow or unreachable while the
// write was in flight) is confirmed by a renewal first, and given up when
// that fails too.
func (e *elector) campaign(ctx context.Context) *term {
	e.observed = nil // observe afresh: never inherit a time from an earlier term
	for {
		actx, cancel := context.WithTimeout(ctx, e.opts.RenewDeadline)
		t, err := e.tryAcquire(actx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		e.report(err)
		if t != nil && !e.fresh(t) {
			t = e.confirm(ctx, t)
		}
		if t != nil {
			e.log.Info("elected leader", "transitions", t.rec.Spec.LeaseTransitions)
			return t
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(e.nextLook()):
		}
	}
}

// fresh reports whether term t has at least a RetryPeriod of its renew
// deadline left: time for its first renewal.
func (e *elector) fresh(t *term) bool {
	return time.Since(t.renewed) < e.opts.RenewDeadline-e.opts.RetryPeriod
}

// confirm renews term t, whose acquisition was confirmed late, and returns
// it when the renewal is confirmed in time; otherwise nil: the campaign
// goes on, and since the record may be this candidate's now, it waits for
// it to expire like any other (the others wait as long).
func (e *elector) confirm(ctx context.Context, t *term) *term {
	e.log.Warn("acquired the lease, but the store confirmed it late; renewing before leading",
		"late", time.Since(t.renewed).Round(time.Millisecond))
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, e.opts.RenewDeadline)
	defer cancel()
	err := e.write(wctx, t, e.opts.Identity)
	if err == nil {
		t.renewed = start
		if e.fresh(t) {
			return t
		}
		err = errors.New("the renewal too was confirmed late")
	}
	if ctx.Err() == nil {
		e.log.Warn("not leading: the late acquisition could not be confirmed", "err", err)
	}
	return nil
}

// nextLook is how long the campaign waits before it looks at the Lease
// again: half a RetryPeriod, or less when the record it watches expires
// sooner.
func (e *elector) nextLook() time.Duration {
	wait := e.opts.RetryPeriod / 2
	if l := e.observed; l != nil && l.Spec.HolderIdentity != "" {
		if d := time.Until(e.observedAt.Add(recordDuration(l, e.opts.Duration))); d < wait {
			wait = max(d, time.Millisecond)
		}
	}
	return wait
}

// tryAcquire reads the Lease and acquires it when it is missing, released,
// or unchanged for a full lease duration since this candidate first saw its
// current resourceVersion. It returns nil and no error when the Lease is
// held, or when another candidate wrote first (a Conflict).
func (e *elector) tryAcquire(ctx context.Context) (*term, error) {
	cur, err := e.leases.Get(ctx, "", e.opts.Name)
	seen := time.Now() // after the read: no earlier than the write it saw
	if errors.Is(err, api.ErrNotFound) {
		start := time.Now()
		l := &api.Lease{ObjectMeta: api.ObjectMeta{Name: e.opts.Name}, Spec: e.claim(api.LeaseSpec{})}
		l.Spec.LeaseTransitions = 0 // the first holder
		created, err := e.leases.Create(ctx, l)
		if errors.Is(err, api.ErrAlreadyExists) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("lease: create %q: %w", e.opts.Name, err)
		}
		return &term{rec: created, renewed: start}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lease: read %q: %w", e.opts.Name, err)
	}
	if e.observed == nil || e.observed.ResourceVersion != cur.ResourceVersion {
		e.observed, e.observedAt = cur, seen
	}
	if cur.Spec.HolderIdentity != "" && time.Since(e.observedAt) < recordDuration(cur, e.opts.Duration) {
		return nil, nil // held, and not silent for long enough
	}
	next := *cur
	next.Spec = e.claim(cur.Spec)
	start := time.Now()
	updated, err := e.leases.Update(ctx, &next)
	if errors.Is(err, api.ErrConflict) || errors.Is(err, api.ErrNotFound) {
		return nil, nil // someone else moved: read again next round
	}
	if err != nil {
		return nil, fmt.Errorf("lease: acquire %q: %w", e.opts.Name, err)
	}
	return &term{rec: updated, renewed: start}, nil
}

// claim returns spec taken over by this candidate.
func (e *elector) claim(spec api.LeaseSpec) api.LeaseSpec {
	now := e.now()
	return api.LeaseSpec{
		HolderIdentity:       e.opts.Identity,
		LeaseDurationSeconds: e.seconds(),
		AcquireTime:          now,
		RenewTime:            now,
		LeaseTransitions:     spec.LeaseTransitions + 1,
	}
}

// seconds is the lease duration as written: whole seconds, rounded up.
func (e *elector) seconds() int { return int(math.Ceil(e.opts.Duration.Seconds())) }

// now is the wall time written into the record, in UTC with microsecond
// precision.
func (e *elector) now() time.Time {
	return e.opts.Now().UTC().Truncate(time.Microsecond)
}

// fence is the api.Fence of term t of the Lease name: its writes carry it.
func (t *term) fence(name string) api.Fence {
	return api.Fence{Lease: name, UID: t.rec.UID, Holder: t.rec.Spec.HolderIdentity, Term: t.rec.Spec.LeaseTransitions}
}

// hold runs lead for term t and renews the Lease every RetryPeriod until
// ctx is done, lead returns, or leadership is lost. It cancels lead's
// context once RenewDeadline has passed since the last confirmed renewal,
// whatever the renewal requests are doing, and returns after lead has
// returned: true when lead returned by itself.
func (e *elector) hold(ctx context.Context, t *term, lead func(ctx context.Context, f api.Fence)) bool {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	valid := &validity{deadline: e.opts.RenewDeadline}
	valid.renewedAt(t.renewed)
	lctx = withValidity(lctx, valid)
	deadline := time.AfterFunc(time.Until(t.renewed.Add(e.opts.RenewDeadline)), cancel)
	defer deadline.Stop()
	done := make(chan struct{})
	fence := t.fence(e.opts.Name)
	go func() {
		defer close(done)
		if lctx.Err() == nil { // never lead past the deadline, however briefly
			lead(lctx, fence)
		}
	}()
	tick := time.NewTicker(e.opts.RetryPeriod)
	defer tick.Stop()
	var lost error
renew:
	for lost == nil {
		select {
		case <-done:
			break renew
		case <-lctx.Done():
			break renew
		case <-tick.C:
		}
		start := time.Now()
		rctx, rcancel := context.WithDeadline(lctx, t.renewed.Add(e.opts.RenewDeadline))
		err := e.write(rctx, t, e.opts.Identity)
		rcancel()
		switch {
		case err == nil:
			if deadline.Stop() { // else it fired while the renewal was in flight
				t.renewed = start
				valid.renewedAt(start)
				deadline.Reset(time.Until(start.Add(e.opts.RenewDeadline)))
			}
		case errors.Is(err, errLost):
			lost = err
		case lctx.Err() == nil:
			e.log.Warn("lease renewal failed; retrying", "err", err)
		}
	}
	// Why the term ends, decided before cancel() blurs it.
	returned := false
	switch {
	case ctx.Err() != nil:
		e.log.Info("stepping down", "reason", "the context ended")
	case lost != nil:
		e.log.Warn("leadership lost", "reason", lost)
	case lctx.Err() != nil:
		e.log.Warn("leadership lost", "reason", "no renewal confirmed within the renew deadline")
	default:
		returned = true
		e.log.Warn("stepping down", "reason", "the lead function returned")
	}
	cancel()
	<-done
	return returned
}

// release clears the holder of the Lease so that another candidate takes
// over at once. It is called after lead has returned, whether or not
// leadership was lost: a Lease already taken over fails the
// compare-and-swap and is left alone. It gives up after RenewDeadline.
func (e *elector) release(t *term) {
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.RenewDeadline)
	defer cancel()
	err := e.write(ctx, t, "")
	switch {
	case err == nil:
		e.log.Info("released the lease")
	case errors.Is(err, errLost):
	default:
		e.log.Warn("could not release the lease; the others take over when it expires", "err", err)
	}
}

// write renews the Lease of term t with holder e.opts.Identity, or releases
// it with holder "", by a compare-and-swap on the last record t wrote. On a
// Conflict it reads the Lease again (conflict.Modify): a record still of
// this term (a write whose answer was lost) is adopted and written again;
// any other is errLost, as is a missing Lease. Other errors are returned
// wrapped.
func (e *elector) write(ctx context.Context, t *term, holder string) error {
	was := t.rec.Spec
	first := *t.rec
	get := func(ctx context.Context) (*api.Lease, error) {
		cur, err := e.leases.Get(ctx, "", e.opts.Name)
		if errors.Is(err, api.ErrNotFound) {
			return nil, errLost
		}
		if err != nil {
			return nil, fmt.Errorf("lease: read %q: %w", e.opts.Name, err)
		}
		return cur, nil
	}
	change := func(next *api.Lease) (bool, error) {
		if !sameTerm(next.Spec, was) {
			return false, errLost
		}
		next.Spec.HolderIdentity = holder
		next.Spec.LeaseDurationSeconds = e.seconds()
		next.Spec.RenewTime = e.now()
		return true, nil
	}
	put := func(ctx context.Context, next *api.Lease) (*api.Lease, error) {
		updated, err := e.leases.Update(ctx, next)
		if errors.Is(err, api.ErrNotFound) {
			return nil, errLost
		}
		if err != nil {
			return nil, fmt.Errorf("lease: write %q: %w", e.opts.Name, err)
		}
		return updated, nil
	}
	updated, _, err := conflict.Modify(ctx, &first, get, change, put)
	if err != nil {
		return err
	}
	t.rec = updated
	return nil
}

// sameTerm reports whether record a belongs to the same term as b: same
// holder, acquired at the same time, after the same number of transitions.
func sameTerm(a, b api.LeaseSpec) bool {
	return a.HolderIdentity != "" && a.HolderIdentity == b.HolderIdentity &&
		a.AcquireTime.Equal(b.AcquireTime) && a.LeaseTransitions == b.LeaseTransitions
}

// report logs API failures while campaigning: the first of a streak as a
// warning, the rest at debug level, and the recovery.
func (e *elector) report(err error) {
	switch {
	case err != nil && !e.failing:
		e.failing = true
		e.log.Warn("cannot reach the lease; retrying", "err", err)
	case err != nil:
		e.log.Debug("cannot reach the lease; retrying", "err", err)
	case e.failing:
		e.failing = false
		e.log.Info("the lease is reachable again")
	}
}

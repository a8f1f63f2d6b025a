package condition

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Why a search found no time: the caller falls back to its retry period
// and says which of these it was (errors.Is).
var (
	// ErrBeyondHorizon: the conditions do not all hold at the end of the
	// horizon.
	ErrBeyondHorizon = fmt.Errorf("the conditions do not all hold within the search horizon of %s", Horizon)
	// ErrSearchTimeout: the search took longer than SearchTimeout.
	ErrSearchTimeout = fmt.Errorf("the search took longer than its limit of %s", SearchTimeout)
	// ErrSearchEval: a condition failed to evaluate at a time searched.
	ErrSearchEval = errors.New("a condition failed to evaluate at a time searched")
)

// The bounds of the search for the earliest time monotonic conditions
// hold.
const (
	// Horizon is how far ahead the search looks: conditions that do not
	// hold a year after the evaluation are evaluated again after the retry
	// period instead.
	Horizon = 365 * 24 * time.Hour
	// Precision is how close the time found is to the true earliest one:
	// the search narrows it to within Precision, never earlier, and rounds
	// it up to a whole Precision, so it is at most two Precisions later.
	// The search takes log2(Horizon/Precision) ≈ 25 evaluations.
	Precision = time.Second
	// SearchTimeout bounds the wall time of one whole search (each of its
	// evaluations is bounded by Timeout too); past it the search gives up.
	SearchTimeout = time.Second
)

// EarliestTrue searches (from, from+Horizon] for the earliest time at
// which every condition holds over vars, assuming they are monotonic in
// `time` (false, then true for ever after, the targets unchanged). It
// returns a time at most 2×Precision after that earliest one (a whole
// second); or, when it finds none, why: ErrBeyondHorizon when the
// conditions do not all hold at from+Horizon, ErrSearchEval when an
// evaluation fails, ErrSearchTimeout when the search takes longer than
// SearchTimeout (the caller then falls back to its retry period, and
// says why). For conditions that are not monotonic the time found is
// merely one at which they hold, which is harmless: they are evaluated
// again then.
func (s *Set) EarliestTrue(ctx context.Context, vars map[string]any, from time.Time) (time.Time, error) {
	sctx, cancel := context.WithTimeout(ctx, SearchTimeout)
	defer cancel()
	act := activation(s.Vars, vars, from)
	holds := func(t time.Time) (bool, error) {
		act[VarTime] = t
		for _, p := range s.Programs {
			r := p.eval(sctx, act)
			switch {
			case r.Err != nil && sctx.Err() != nil && ctx.Err() == nil:
				return false, ErrSearchTimeout
			case r.Err != nil:
				return false, fmt.Errorf("%w (%s): %v", ErrSearchEval, t.UTC().Format(time.RFC3339), r.Err)
			case !r.Value:
				return false, nil
			}
		}
		return true, nil
	}
	lo, hi := from, from.Add(Horizon)
	ok, err := holds(hi)
	if err != nil {
		return time.Time{}, err
	}
	if !ok {
		return time.Time{}, ErrBeyondHorizon
	}
	for hi.Sub(lo) > Precision {
		if sctx.Err() != nil && ctx.Err() == nil {
			return time.Time{}, ErrSearchTimeout
		}
		mid := lo.Add(hi.Sub(lo) / 2)
		ok, err := holds(mid)
		if err != nil {
			return time.Time{}, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	// Rounded up to a whole Precision (still a time they hold at), so the
	// time written in status reads well.
	if r := hi.Truncate(Precision); r.Before(hi) {
		hi = r.Add(Precision)
	}
	return hi, nil
}

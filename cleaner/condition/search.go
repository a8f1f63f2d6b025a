package condition

import (
	"context"
	"time"
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
// second), and true; or
// false when the conditions do not all hold at from+Horizon, when any
// evaluation fails, or when the search takes longer than SearchTimeout (the
// caller then falls back to its retry period). For
// conditions that are not monotonic the time found is merely one at which
// they hold, which is harmless: they are evaluated again then.
func (s *Set) EarliestTrue(ctx context.Context, vars map[string]any, from time.Time) (time.Time, bool) {
	ctx, cancel := context.WithTimeout(ctx, SearchTimeout)
	defer cancel()
	act := activation(s.Vars, vars, from)
	holds := func(t time.Time) (ok, failed bool) {
		act[VarTime] = t
		for _, p := range s.Programs {
			r := p.eval(ctx, act)
			if r.Err != nil {
				return false, true
			}
			if !r.Value {
				return false, false
			}
		}
		return true, false
	}
	lo, hi := from, from.Add(Horizon)
	if ok, _ := holds(hi); !ok {
		return time.Time{}, false
	}
	for hi.Sub(lo) > Precision {
		mid := lo.Add(hi.Sub(lo) / 2)
		ok, failed := holds(mid)
		if failed {
			return time.Time{}, false
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
	return hi, true
}

package store

import (
	"context"
	"log/slog"
	"time"
)

// RunCompactor compacts the store every interval, keeping the history of
// the last interval: at each tick it compacts to the revision seen at the
// previous tick. Watches and continue tokens older than that get
// ErrCompacted (HTTP 410). It blocks until ctx is done.
func (s *Store) RunCompactor(ctx context.Context, interval time.Duration, log *slog.Logger) {
	s.RunGuardedCompactor(ctx, interval, nil, log)
}

// RunGuardedCompactor is RunCompactor calling guard(ctx, rev) before each
// compaction to rev: an error skips that compaction (a leader that lost
// its election compacts nothing). A nil guard allows every compaction.
func (s *Store) RunGuardedCompactor(ctx context.Context, interval time.Duration, guard func(ctx context.Context, rev int64) error, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rev, err := s.Revision(ctx)
		if err != nil {
			log.Warn("compactor: read revision", "err", err)
			continue
		}
		if last > 0 && guard != nil {
			if err := guard(ctx, last); err != nil {
				if ctx.Err() == nil {
					log.Warn("compactor: not compacting: the guard refused", "revision", last, "err", err)
				}
				continue
			}
		}
		if last > 0 {
			if err := s.Compact(ctx, last); err != nil && ctx.Err() == nil {
				log.Warn("compactor: compact", "revision", last, "err", err)
			} else {
				log.Debug("compacted", "revision", last)
			}
		}
		last = rev
	}
}

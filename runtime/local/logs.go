package local

import (
	"context"
	"io"
	"os"
	"sync"
	"time"

	"cairn.dev/cairn/runtime"
)

// follower streams a unit's log as it grows: at the end of the file it
// waits (for the unit to change, or PollInterval) and reads again; once the
// unit has ended it reads what is left and reports io.EOF.
type follower struct {
	ctx context.Context
	r   *Runtime
	u   *unit
	f   *os.File

	final     bool // the unit had ended before the last read began
	closeOnce sync.Once
	closed    chan struct{}
}

func newFollower(ctx context.Context, r *Runtime, u *unit, f *os.File) *follower {
	return &follower{ctx: ctx, r: r, u: u, f: f, closed: make(chan struct{})}
}

// Read blocks until there is output, the unit has ended and everything is
// read (io.EOF), ctx ends (ctx.Err()), the follower is closed
// (os.ErrClosed) or the runtime is closed (runtime.ErrClosed).
func (l *follower) Read(p []byte) (int, error) {
	for {
		n, err := l.f.Read(p)
		if n > 0 || (err != nil && err != io.EOF) {
			return n, err
		}
		if l.final {
			return 0, io.EOF
		}
		rec, changed, removed := l.u.snapshot()
		if removed || rec.State.Phase.Done() {
			// Everything the unit wrote is in the file now: one more read.
			l.final = true
			continue
		}
		t := time.NewTimer(l.r.opts.PollInterval)
		select {
		case <-l.ctx.Done():
			t.Stop()
			return 0, l.ctx.Err()
		case <-l.closed:
			t.Stop()
			return 0, os.ErrClosed
		case <-l.r.done:
			t.Stop()
			return 0, runtime.ErrClosed
		case <-changed:
		case <-t.C:
		}
		t.Stop()
	}
}

// Close ends the stream; a Read blocked in it returns.
func (l *follower) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.closed)
		err = l.f.Close()
	})
	return err
}

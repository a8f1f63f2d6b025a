package manager

import (
	"context"
	"errors"
	"fmt"

	"cairn.dev/cairn/lease"
	"cairn.dev/cairn/runtime"
)

// ErrTermEnded is returned by a Term's Runtime.Start when the term is no
// longer valid by this process's own clock: nothing was started.
var ErrTermEnded = errors.New("manager: this process's leadership term has ended")

// Valid reports whether the term whose context ctx derives from (every
// context a controller's runnable and its reconciles get) is still valid
// by this process's monotonic clock: renewed within the lease's renew
// deadline, and not ended. A process resumed after a pause (SIGSTOP, a
// long GC) sees its term expired here before its renewal goroutine has
// run. It never blocks. Errors: ErrTermEnded wrapping why; nil without
// leader election.
func Valid(ctx context.Context) error {
	if err := lease.Valid(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrTermEnded, err)
	}
	return nil
}

// termRuntime is a Term's Runtime: it checks Valid right before every
// start, so that a leader that lost its term starts nothing, even before
// it noticed. The window that remains is the start itself: a process
// paused between the check and the runtime's launch launches when it
// resumes (docs/operations.md, "Fenced side effects").
type termRuntime struct{ runtime.Runtime }

// guardStarts wraps rt (nil stays nil).
func guardStarts(rt runtime.Runtime) runtime.Runtime {
	if rt == nil {
		return nil
	}
	return termRuntime{rt}
}

// Start checks the term (Valid) and starts spec on the wrapped runtime.
// It blocks as the runtime's Start. Errors: ErrTermEnded (nothing
// started), or the runtime's.
func (r termRuntime) Start(ctx context.Context, spec runtime.Spec) (runtime.State, error) {
	if err := Valid(ctx); err != nil {
		return runtime.State{}, fmt.Errorf("unit %s not started: %w", spec.ID, err)
	}
	return r.Runtime.Start(ctx, spec)
}

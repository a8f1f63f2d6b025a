package testkit

import (
	"context"
	"sync/atomic"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// FailingReads is a real client whose reads (Get, List, Watch) of one kind
// fail with ServiceUnavailable while Fail(true) is in effect; every other
// call, and every read once Fail(false), goes through to the client it
// wraps. It starts failing. It is safe for concurrent use.
type FailingReads struct {
	client.Interface
	kind  string
	off   atomic.Bool
	fails atomic.Int64
}

// NewFailingReads wraps c so that its reads of kind fail (see FailingReads).
func NewFailingReads(c client.Interface, kind string) *FailingReads {
	return &FailingReads{Interface: c, kind: kind}
}

// Fail makes the reads of the kind fail (on) or go through (off).
func (f *FailingReads) Fail(on bool) { f.off.Store(!on) }

// Failures is how many reads have failed so far.
func (f *FailingReads) Failures() int64 { return f.fails.Load() }

// refuse returns the error a read of kind meets now, or nil.
func (f *FailingReads) refuse(kind string) error {
	if kind != f.kind || f.off.Load() {
		return nil
	}
	f.fails.Add(1)
	return api.NewStatus(api.ReasonUnavailable, "reads of %s fail (test)", kind)
}

// Get is the wrapped client's Get, or ServiceUnavailable (see FailingReads).
func (f *FailingReads) Get(ctx context.Context, kind, ns, name string) (*api.Object, error) {
	if err := f.refuse(kind); err != nil {
		return nil, err
	}
	return f.Interface.Get(ctx, kind, ns, name)
}

// List is the wrapped client's List, or ServiceUnavailable (see FailingReads).
func (f *FailingReads) List(ctx context.Context, kind, ns string, opts api.ListOptions) (*api.List, error) {
	if err := f.refuse(kind); err != nil {
		return nil, err
	}
	return f.Interface.List(ctx, kind, ns, opts)
}

// Watch is the wrapped client's Watch, or ServiceUnavailable (see FailingReads).
func (f *FailingReads) Watch(ctx context.Context, kind, ns string, opts api.ListOptions) (api.Watcher, error) {
	if err := f.refuse(kind); err != nil {
		return nil, err
	}
	return f.Interface.Watch(ctx, kind, ns, opts)
}

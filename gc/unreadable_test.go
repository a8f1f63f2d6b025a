package gc_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/gc"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/manager"
)

// failingReads is the env's real client whose reads (get, list, watch) of
// one kind fail with ServiceUnavailable while on is set; everything else
// goes through.
type failingReads struct {
	client.Interface
	kind  string
	on    atomic.Bool
	fails atomic.Int64
}

func (f *failingReads) refuse(kind string) error {
	if kind != f.kind || !f.on.Load() {
		return nil
	}
	f.fails.Add(1)
	return api.NewStatus(api.ReasonUnavailable, "reads of %s fail (test)", kind)
}

func (f *failingReads) Get(ctx context.Context, kind, ns, name string) (*api.Object, error) {
	if err := f.refuse(kind); err != nil {
		return nil, err
	}
	return f.Interface.Get(ctx, kind, ns, name)
}

func (f *failingReads) List(ctx context.Context, kind, ns string, opts api.ListOptions) (*api.List, error) {
	if err := f.refuse(kind); err != nil {
		return nil, err
	}
	return f.Interface.List(ctx, kind, ns, opts)
}

func (f *failingReads) Watch(ctx context.Context, kind, ns string, opts api.ListOptions) (api.Watcher, error) {
	if err := f.refuse(kind); err != nil {
		return nil, err
	}
	return f.Interface.Watch(ctx, kind, ns, opts)
}

// The collector never deletes a dependent because it could not read its
// owner: with every read of the owner's kind failing, the owner is absent
// from what the collector sees, and the dependent stays (the collector
// waits for that kind's first list before it acts at all); once reads work
// again, the collector collects as usual and the dependent still stays.
func TestCollector_NeverDeletesADependentBecauseAReadFailed(t *testing.T) {
	e := newEnv(t, false)
	owner := e.create(testkit.Object(api.KindDataObject, ns, "owner"))
	dep := e.secret("dep", testkit.OwnedBy(owner))
	fr := &failingReads{Interface: e.c, kind: api.KindDataObject}
	fr.on.Store(true)
	e.startCollector(fr, gc.Options{Workers: 4, ConfirmRetry: 20 * time.Millisecond}, manager.Options{Logger: testLogger()})
	e.eventually("the collector's reads of the owner's kind failing", func() string {
		if n := fr.fails.Load(); n < 5 {
			return fmt.Sprintf("%d failed reads", n)
		}
		return ""
	})
	if s := e.state(dep); s != "live" {
		t.Fatalf("dependent %s while its owner could not be read; want live", s)
	}
	fr.on.Store(false)
	o3 := e.secret("o3")
	d3 := e.secret("d3", testkit.OwnedBy(o3))
	e.del(o3, false)
	e.allGone(o3, d3)
	if s := e.state(dep); s != "live" {
		t.Fatalf("dependent %s once reads work again; want live", s)
	}
}

package cleaner_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cleaner"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

// failingReads is the env's real client whose reads (get, list, watch) of
// one kind fail with ServiceUnavailable while on is set.
type failingReads struct {
	client.Interface
	kind string
	on   atomic.Bool
}

func (f *failingReads) refuse(kind string) error {
	if kind != f.kind || !f.on.Load() {
		return nil
	}
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

// A Cleaner whose condition input cannot be read (an error, not NotFound)
// deletes nothing and says why in its status, even though its condition
// holds when that input is absent; once reads work again, the input is
// found truly absent and the Cleaner deletes.
func TestCleaner_UnreadableInputDeletesNothingAndSaysWhy(t *testing.T) {
	e := newEnv(t)
	victim := e.create(testkit.Object(api.KindDataObject, ns, "victim"))
	fr := &failingReads{Interface: e.c, kind: api.KindSecret}
	fr.on.Store(true)
	e.startWith(fr, cleaner.Options{SyncTimeout: 200 * time.Millisecond}, nil)
	e.createCleaner("c", api.CleanerSpec{
		Retry: api.CleanerRetry{Period: api.Duration{Duration: time.Second}},
		Targets: []api.CleanerTarget{
			secretTarget("s", "s", false),
			{Name: "victim", Reference: api.TargetReference{Kind: api.KindDataObject, Name: victim.Name}, Delete: true},
		},
		Conditions: []string{`s == null`},
	})
	c := e.waitPhase("c", api.CleanerFailed)
	if le := c.Status.LastError; le == nil || le.Reason != api.CleanerReasonUnresolvableTarget || !strings.Contains(le.Message, "Secret") {
		t.Fatalf("lastError %+v: want %s naming the kind it could not read", le, api.CleanerReasonUnresolvableTarget)
	}
	if e.gone(api.KindDataObject, "victim") {
		t.Fatal("the Cleaner deleted a target while its condition input could not be read")
	}
	fr.on.Store(false)
	testkit.EventuallyNil(t, wait, "the victim deleted once the input is found absent", func() error {
		if !e.gone(api.KindDataObject, "victim") {
			c, _ := e.getCleaner("c")
			return fmt.Errorf("victim still there; cleaner %+v", c)
		}
		return nil
	})
}

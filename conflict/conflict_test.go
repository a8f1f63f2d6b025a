package conflict_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/conflict"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

// fixture is a real API (embedded etcd) holding one Secret, "s".
type fixture struct {
	c   client.Interface
	ctx context.Context
	// reads and writes count the calls of get and write.
	reads, writes int
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{c: local.New(servertest.Start(t).Registry, identity.System()), ctx: testkit.Context(t)}
	if _, err := f.c.Create(f.ctx, testkit.Secret("default", "s", nil)); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) get(ctx context.Context) (*api.Object, error) {
	f.reads++
	return f.c.Get(ctx, api.KindSecret, "default", "s")
}

func (f *fixture) write(ctx context.Context, o *api.Object) (*api.Object, error) {
	f.writes++
	return f.c.Update(ctx, o)
}

// annotate sets annotation k=v on the stored Secret, behind the back of a
// Modify in progress.
func (f *fixture) annotate(t *testing.T, k, v string) {
	t.Helper()
	o, err := f.c.Get(f.ctx, api.KindSecret, "default", "s")
	if err != nil {
		t.Fatal(err)
	}
	if o.Annotations == nil {
		o.Annotations = map[string]string{}
	}
	o.Annotations[k] = v
	if _, err := f.c.Update(f.ctx, o); err != nil {
		t.Fatal(err)
	}
}

func setLabel(o *api.Object) (bool, error) {
	if o.Labels["mine"] == "yes" {
		return false, nil
	}
	if o.Labels == nil {
		o.Labels = map[string]string{}
	}
	o.Labels["mine"] = "yes"
	return true, nil
}

func TestModify_ReappliesTheChangeOnTheObjectReadAfterAConflict(t *testing.T) {
	f := newFixture(t)
	stale, err := f.get(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.annotate(t, "theirs", "yes") // stale is now behind the store
	out, wrote, err := conflict.Modify(f.ctx, stale, f.get, setLabel, f.write)
	if err != nil || !wrote {
		t.Fatalf("Modify = wrote %v, %v; want a write", wrote, err)
	}
	if out.Labels["mine"] != "yes" || out.Annotations["theirs"] != "yes" {
		t.Fatalf("stored labels %v, annotations %v: want both writers' changes", out.Labels, out.Annotations)
	}
	if f.writes != 2 || f.reads != 2 { // the first read is the test's
		t.Fatalf("%d writes, %d reads: want the conflicting write, one re-read and a second write", f.writes, f.reads-1)
	}
}

func TestModify_WritesNothingWhenTheChangeChangesNothing(t *testing.T) {
	f := newFixture(t)
	if _, _, err := conflict.Modify(f.ctx, nil, f.get, setLabel, f.write); err != nil {
		t.Fatal(err)
	}
	before, _ := f.get(f.ctx)
	out, wrote, err := conflict.Modify(f.ctx, nil, f.get, setLabel, f.write)
	if err != nil || wrote {
		t.Fatalf("Modify = wrote %v, %v; want no write", wrote, err)
	}
	if out.ResourceVersion != before.ResourceVersion || f.writes != 1 {
		t.Fatalf("resourceVersion %s (was %s), %d writes: want the object as read and the first write only",
			out.ResourceVersion, before.ResourceVersion, f.writes)
	}
}

func TestModify_GivesUpAfterAttemptsWithTheConflict(t *testing.T) {
	f := newFixture(t)
	n := 0
	change := func(o *api.Object) (bool, error) {
		n++
		f.annotate(t, "theirs", fmt.Sprint(n)) // always one write ahead
		return setLabel(o)
	}
	_, wrote, err := conflict.Modify(f.ctx, nil, f.get, change, f.write)
	if !errors.Is(err, api.ErrConflict) || wrote {
		t.Fatalf("Modify = wrote %v, %v; want the Conflict", wrote, err)
	}
	if f.writes != conflict.Attempts {
		t.Fatalf("%d writes: want %d attempts", f.writes, conflict.Attempts)
	}
}

func TestModify_ErrorsOfChangeAndGetEndItWithoutARetry(t *testing.T) {
	f := newFixture(t)
	gone := fmt.Errorf("replaced meanwhile: %w", api.ErrConflict)
	_, _, err := conflict.Modify(f.ctx, nil, f.get, func(*api.Object) (bool, error) { return false, gone }, f.write)
	if !errors.Is(err, gone) || f.reads != 1 || f.writes != 0 {
		t.Fatalf("Modify = %v after %d reads, %d writes; want change's error after one read", err, f.reads, f.writes)
	}
	missing := func(ctx context.Context) (*api.Object, error) {
		f.reads++
		return f.c.Get(ctx, api.KindSecret, "default", "missing")
	}
	_, _, err = conflict.Modify(f.ctx, nil, missing, setLabel, f.write)
	if !errors.Is(err, api.ErrNotFound) || f.reads != 2 || f.writes != 0 {
		t.Fatalf("Modify = %v after %d reads; want NotFound after one read", err, f.reads)
	}
}

func TestRetryIf_RetriesOnlyWhatItIsToldAndNotPastCtx(t *testing.T) {
	other := errors.New("other")
	for _, tc := range []struct {
		name      string
		errs      []error // fn's answers, in order; nil after the last
		cancel    bool
		wantCalls int
		want      error
	}{
		{"success at once", nil, false, 1, nil},
		{"conflicts then success", []error{api.ErrConflict, api.ErrConflict}, false, 3, nil},
		{"another error is returned at once", []error{api.ErrConflict, other}, false, 2, other},
		{"ctx done: no further attempt", []error{api.ErrConflict, api.ErrConflict}, true, 1, api.ErrConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			calls := 0
			err := conflict.Retry(ctx, func() error {
				calls++
				if tc.cancel {
					cancel()
				}
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			})
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) || calls != tc.wantCalls {
				t.Fatalf("Retry = %v after %d calls; want %v after %d", err, calls, tc.want, tc.wantCalls)
			}
		})
	}
}

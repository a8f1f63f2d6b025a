package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/registry"
)

// widgets creates n Widgets "w0".. in namespace ns of r and returns them.
func widgets(t *testing.T, r *registry.Registry, ns string, n int) []*api.Object {
	t.Helper()
	out := make([]*api.Object, n)
	for i := range out {
		o, err := r.Create(sysCtx(), testkit.Widget(ns, fmt.Sprintf("w%d", i), testkit.Spec(`{"n":1}`)))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = o
	}
	return out
}

// withStatus is a copy of o whose status is status (JSON).
func withStatus(o *api.Object, status string) *api.Object {
	c := o.DeepCopy()
	c.SetField(api.FieldStatus, json.RawMessage(status))
	return c
}

// statusIs fails unless the stored object kind ns/name has status want.
func statusIs(t *testing.T, r *registry.Registry, kind, ns, name, want string) {
	t.Helper()
	o, err := r.Get(sysCtx(), kind, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(o.Field(api.FieldStatus)); got != want {
		t.Errorf("%s %s status %s, want %s", kind, name, got, want)
	}
}

func TestBatchRounds_EachKeyOncePerRoundInOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []string
		want [][]int
	}{
		{"none", nil, nil},
		{"distinct keys share one round", []string{"a", "b", "c"}, [][]int{{0, 1, 2}}},
		{"a key written twice goes to a second round", []string{"a", "b", "a"}, [][]int{{0, 1}, {2}}},
		{"three writes of one key, three rounds", []string{"a", "a", "b", "a"}, [][]int{{0, 2}, {1}, {3}}},
		{"writes not made are skipped", []string{"", "a", "", "a"}, [][]int{{1}, {3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := registry.BatchRounds(tc.keys); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("rounds %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUpdateStatuses_WritesEveryStatusInOneTransaction(t *testing.T) {
	r, s := newRegistry(t)
	// newRegistry serves the real kinds: Cleaners' statuses are typed.
	ctx := sysCtx()
	var objs []*api.Object
	for i := range 10 {
		cl, err := r.Create(ctx, testkit.Cleaner("default", fmt.Sprintf("c%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, withStatus(cl, fmt.Sprintf(`{"phase":"Waiting","observedGeneration":%d}`, i+1)))
	}
	before := revisionOf(t, s)
	res := r.UpdateStatuses(ctx, objs)
	if len(res) != len(objs) {
		t.Fatalf("%d results for %d writes", len(res), len(objs))
	}
	for i, got := range res {
		if got.Err != nil {
			t.Fatalf("write %d: %v", i, got.Err)
		}
		if got.Object.ResourceVersion != res[0].Object.ResourceVersion {
			t.Errorf("write %d committed at %s, write 0 at %s: not one transaction", i, got.Object.ResourceVersion, res[0].Object.ResourceVersion)
		}
		statusIs(t, r, api.KindCleaner, "default", objs[i].Name, fmt.Sprintf(`{"observedGeneration":%d,"phase":"Waiting"}`, i+1))
	}
	if after := revisionOf(t, s); after != before+1 {
		t.Errorf("the store moved from revision %d to %d: want one transaction", before, after)
	}
}

func TestUpdateStatuses_OneFailingWriteFailsAloneAndTheOthersAreCommitted(t *testing.T) {
	r := newLimited(t).start(t, registry.Options{})
	ctx := sysCtx()
	if _, err := r.Create(ctx, testkit.Object(api.KindNamespace, "", "batch")); err != nil {
		t.Fatal(err)
	}
	ws := widgets(t, r, "batch", 3)
	cl, err := r.Create(ctx, testkit.Cleaner("batch", "c"))
	if err != nil {
		t.Fatal(err)
	}
	moved, err := r.UpdateStatus(ctx, withStatus(ws[1], `{"by":"someone else"}`))
	if err != nil {
		t.Fatal(err)
	}
	missing := withStatus(ws[1], `{"x":1}`)
	missing.Name = "missing"
	unknownKind := withStatus(ws[1], `{"x":1}`)
	unknownKind.Kind = "Gadget"
	for _, tc := range []struct {
		name string
		bad  *api.Object
		want error
	}{
		{"stale resourceVersion", withStatus(ws[1], `{"mine":true}`), api.ErrConflict},
		{"object not found", missing, api.ErrNotFound},
		{"status that does not decode", withStatus(cl, `{"phase":5}`), api.ErrBadRequest},
		{"unknown kind", unknownKind, api.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			good0, _ := r.Get(ctx, testkit.KindWidget, "batch", "w0")
			good2, _ := r.Get(ctx, testkit.KindWidget, "batch", "w2")
			status := fmt.Sprintf(`{"case":%q}`, tc.name)
			res := r.UpdateStatuses(ctx, []*api.Object{withStatus(good0, status), tc.bad, withStatus(good2, status)})
			if !errors.Is(res[1].Err, tc.want) || res[1].Object != nil {
				t.Fatalf("the bad write: %v (object %v), want %v", res[1].Err, res[1].Object, tc.want)
			}
			for _, i := range []int{0, 2} {
				if res[i].Err != nil {
					t.Fatalf("write %d failed with the bad one: %v", i, res[i].Err)
				}
				statusIs(t, r, testkit.KindWidget, "batch", fmt.Sprintf("w%d", i), status)
			}
			if res[0].Object.ResourceVersion != res[2].Object.ResourceVersion {
				t.Errorf("the good writes were committed apart (%s, %s)", res[0].Object.ResourceVersion, res[2].Object.ResourceVersion)
			}
		})
	}
	statusIs(t, r, testkit.KindWidget, "batch", "w1", `{"by":"someone else"}`)
	if got, _ := r.Get(ctx, testkit.KindWidget, "batch", "w1"); got.ResourceVersion != moved.ResourceVersion {
		t.Errorf("w1 was written again: %s, want %s", got.ResourceVersion, moved.ResourceVersion)
	}
}

func TestUpdateStatuses_SameObjectTwiceIsWrittenInOrder(t *testing.T) {
	r := newLimited(t).start(t, registry.Options{})
	ctx := sysCtx()
	w := widgets(t, r, "default", 1)[0]
	// Without a resourceVersion both apply, the second last.
	first, second := withStatus(w, `{"n":1}`), withStatus(w, `{"n":2}`)
	first.ResourceVersion, second.ResourceVersion = "", ""
	res := r.UpdateStatuses(ctx, []*api.Object{first, second})
	if res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("unconditional writes: %v, %v", res[0].Err, res[1].Err)
	}
	statusIs(t, r, testkit.KindWidget, "default", "w0", `{"n":2}`)
	// With the same resourceVersion the second is a Conflict.
	cur, _ := r.Get(ctx, testkit.KindWidget, "default", "w0")
	res = r.UpdateStatuses(ctx, []*api.Object{withStatus(cur, `{"n":3}`), withStatus(cur, `{"n":4}`)})
	if res[0].Err != nil || !errors.Is(res[1].Err, api.ErrConflict) {
		t.Fatalf("conditional writes: %v, %v; want nil, Conflict", res[0].Err, res[1].Err)
	}
	statusIs(t, r, testkit.KindWidget, "default", "w0", `{"n":3}`)
}

func TestUpdateStatuses_TransactionOverANamespaceLimitCommitsTheWritesThatFit(t *testing.T) {
	r := newLimited(t).start(t, registry.Options{})
	ctx := sysCtx()
	// Every write records managedFields (a few hundred bytes a widget).
	if _, err := r.Create(ctx, namespaceWith("tight", `{"limits":{"bytes":"5Ki"}}`)); err != nil {
		t.Fatal(err)
	}
	ws := widgets(t, r, "tight", 3)
	pad := fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", 1300))
	// Together the three grow the namespace past 5Ki; the first two fit.
	res := r.UpdateStatuses(ctx, []*api.Object{withStatus(ws[0], pad), withStatus(ws[1], pad), withStatus(ws[2], pad)})
	for i := range 2 {
		if res[i].Err != nil {
			t.Fatalf("write %d, which fits, failed: %v", i, res[i].Err)
		}
		statusIs(t, r, testkit.KindWidget, "tight", ws[i].Name, pad)
	}
	mustForbidLimit(t, res[2].Err, "spec.limits.bytes", `namespace "tight" has reached its limit of 5120 bytes`)
	statusIs(t, r, testkit.KindWidget, "tight", "w2", "")
}

func TestUpdateStatuses_WithoutACallerEveryWriteIsUnauthorized(t *testing.T) {
	r := newLimited(t).start(t, registry.Options{})
	w := widgets(t, r, "default", 2)
	for i, res := range r.UpdateStatuses(context.Background(), []*api.Object{withStatus(w[0], `{"a":1}`), withStatus(w[1], `{"a":1}`)}) {
		if !errors.Is(res.Err, api.ErrUnauthorized) {
			t.Errorf("write %d: %v, want Unauthorized", i, res.Err)
		}
	}
	statusIs(t, r, testkit.KindWidget, "default", "w0", "")
}

func TestUpdateStatuses_ForbiddenWriteFailsAlone(t *testing.T) {
	// A rule that lets "dev" write statuses in the namespace "mine" only.
	mineOnly := func(_ context.Context, a authz.Attributes) (authz.Decision, string) {
		if a.User.Name == "dev" && a.Namespace == "mine" && a.Subresource == "status" {
			return authz.Allow, ""
		}
		return authz.Deny, "only statuses in mine"
	}
	r := newLimited(t).start(t, registry.Options{Authorize: []authz.Rule{mineOnly}})
	ctx := sysCtx()
	for _, n := range []string{"mine", "theirs"} {
		if _, err := r.Create(ctx, testkit.Object(api.KindNamespace, "", n)); err != nil {
			t.Fatal(err)
		}
	}
	mine, theirs := widgets(t, r, "mine", 1)[0], widgets(t, r, "theirs", 1)[0]
	res := r.UpdateStatuses(identity.With(context.Background(), identity.User{Name: "dev"}),
		[]*api.Object{withStatus(theirs, `{"a":1}`), withStatus(mine, `{"a":1}`)})
	if !errors.Is(res[0].Err, api.ErrForbidden) {
		t.Errorf("write outside mine: %v, want Forbidden", res[0].Err)
	}
	if res[1].Err != nil {
		t.Errorf("write in mine: %v", res[1].Err)
	}
	statusIs(t, r, testkit.KindWidget, "theirs", "w0", "")
	statusIs(t, r, testkit.KindWidget, "mine", "w0", `{"a":1}`)
}

func TestUpdateStatuses_CancelledMidwayCommitsEachTransactionWholeOrNotAtAll(t *testing.T) {
	r := newLimited(t).start(t, registry.Options{})
	const batches, per = 12, 16
	ws := widgets(t, r, "default", batches*per)
	// Four writers take three batches each, one after the other; the
	// writer whose batch is the second to return cancels them all.
	ctx, cancel := context.WithCancel(sysCtx())
	defer cancel()
	var wg sync.WaitGroup
	var returned atomic.Int32
	results := make([][]registry.StatusResult, batches)
	for w := range 4 {
		wg.Go(func() {
			for b := w; b < batches; b += 4 {
				var objs []*api.Object
				for _, w := range ws[b*per : (b+1)*per] {
					objs = append(objs, withStatus(w, fmt.Sprintf(`{"batch":%d}`, b)))
				}
				results[b] = r.UpdateStatuses(ctx, objs)
				if returned.Add(1) == 2 {
					cancel()
				}
			}
		})
	}
	wg.Wait()
	// Read every widget at one revision. A transaction whose caller gave
	// up (the cancel) may still be applied by etcd after UpdateStatuses
	// returned; widgets read one by one could fall on both sides of it and
	// find a whole transaction half applied.
	list, err := r.List(sysCtx(), testkit.KindWidget, "default", api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]*api.Object{}
	for _, o := range list.Items {
		stored[o.Name] = o
	}
	committed := 0
	for b := range batches {
		var wrote []bool
		revs := map[string]bool{}
		for _, w := range ws[b*per : (b+1)*per] {
			o := stored[w.Name]
			if o == nil {
				t.Fatalf("widget %s is missing from the list at %s", w.Name, list.ResourceVersion)
			}
			ok := string(o.Field(api.FieldStatus)) == fmt.Sprintf(`{"batch":%d}`, b)
			if ok {
				revs[o.ResourceVersion] = true
			}
			wrote = append(wrote, ok)
		}
		if len(revs) > 1 {
			t.Fatalf("batch %d was written at several revisions %v: not one transaction", b, revs)
		}
		for i, ok := range wrote {
			if ok != wrote[0] {
				t.Fatalf("batch %d is half written at revision %s: %v", b, list.ResourceVersion, wrote)
			}
			if res := results[b][i]; ok && res.Err == nil && res.Object == nil || !ok && res.Err == nil {
				t.Fatalf("batch %d write %d: result %+v, stored %v", b, i, res, ok)
			}
		}
		if wrote[0] {
			committed++
		}
	}
	if committed < 1 || committed == batches {
		t.Fatalf("%d of %d batches committed: the cancel did not land between the first and the last", committed, batches)
	}
}

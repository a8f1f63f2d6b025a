package registry_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/storetest"
)

// limited is a store with its encryption key, on which registries start
// (several at once, or one after another) as servers sharing one etcd do.
type limited struct {
	s       *store.Store
	keyFile string
}

func newLimited(t *testing.T) limited {
	t.Helper()
	s, _ := storetest.Start(t)
	return limited{s: s, keyFile: filepath.Join(t.TempDir(), "key")}
}

// start starts a registry serving every kind and Widget, with opts'
// namespace limits.
func (l limited) start(t *testing.T, opts registry.Options) *registry.Registry {
	t.Helper()
	enc, err := registry.LoadOrCreateKey(l.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	opts.Kinds, opts.Encryption = append(kinds.All(kinds.Deps{}), testkit.WidgetKind()), enc
	return startOn(t, l.s, opts)
}

// namespaceWith builds a Namespace whose spec is spec (JSON).
func namespaceWith(name, spec string) *api.Object {
	return testkit.Object(api.KindNamespace, "", name, testkit.Spec(spec))
}

// padded is a Widget whose spec holds n bytes of padding.
func padded(ns, name string, n int) *api.Object {
	return testkit.Widget(ns, name, testkit.Spec(fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", n))))
}

// usageOf reads the namespace's status.usage as r reports it.
func usageOf(t *testing.T, r *registry.Registry, ns string) api.NamespaceUsage {
	t.Helper()
	obj, err := r.Get(sysCtx(), api.KindNamespace, "", ns)
	if err != nil {
		t.Fatal(err)
	}
	var n api.Namespace
	if err := obj.Into(&n); err != nil {
		t.Fatal(err)
	}
	if n.Status.Usage == nil {
		t.Fatalf("namespace %s has no status.usage", ns)
	}
	return *n.Status.Usage
}

// mustForbidLimit fails unless err is the Forbidden of a namespace limit
// whose message holds want.
func mustForbidLimit(t *testing.T, err error, field, want string) {
	t.Helper()
	var st *api.Status
	if !errors.As(err, &st) || st.Reason != api.ReasonForbidden {
		t.Fatalf("want Forbidden (%s), got %v", want, err)
	}
	if !strings.Contains(st.Message, want) {
		t.Fatalf("message %q does not say %q", st.Message, want)
	}
	if st.Details == nil || st.Details.Kind != api.KindNamespace || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != field {
		t.Fatalf("details do not name the namespace and %s: %+v", field, st.Details)
	}
}

func TestNamespaceLimits_SixthObjectIsForbiddenAndADeleteFreesRoom(t *testing.T) {
	r := newLimited(t).start(t, registry.Options{})
	ctx := sysCtx()
	if _, err := r.Create(ctx, namespaceWith("team-a", `{"limits":{"objects":5}}`)); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := r.Create(ctx, testkit.Secret("team-a", fmt.Sprintf("s%d", i), map[string]string{"k": "v"})); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	_, err := r.Create(ctx, testkit.Widget("team-a", "sixth"))
	mustForbidLimit(t, err, "spec.limits.objects",
		`namespace "team-a" has reached its limit of 5 objects (spec.limits.objects): it holds 5 and this write adds 1`)
	// Marking for deletion passes at the limit, but frees nothing: the
	// object stays until its finalizers are gone.
	if _, _, err := r.Delete(ctx, "Secret", "team-a", "s0", api.DeleteOptions{}); err != nil {
		t.Fatalf("deletion mark at the limit: %v", err)
	}
	if _, err := r.Create(ctx, testkit.Widget("team-a", "sixth")); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("create while the marked object remains: %v", err)
	}
	if _, gone, err := r.Delete(ctx, "Secret", "team-a", "s1", api.DeleteOptions{Force: true}); err != nil || !gone {
		t.Fatalf("forced delete: gone %v, %v", gone, err)
	}
	if _, err := r.Create(ctx, testkit.Widget("team-a", "sixth")); err != nil {
		t.Fatalf("create after a delete: %v", err)
	}
	if u := usageOf(t, r, "team-a"); u.Objects != 5 || u.Limits.Objects == nil || *u.Limits.Objects != 5 {
		t.Fatalf("usage %+v, want 5 objects of 5", u)
	}
}

func TestNamespaceLimits_BytesLimitRefusesGrowthAndLetsShrinkingWritesPass(t *testing.T) {
	r := newLimited(t).start(t, registry.Options{})
	ctx := sysCtx()
	if _, err := r.Create(ctx, namespaceWith("team-b", `{"limits":{"bytes":"4Ki"}}`)); err != nil {
		t.Fatal(err)
	}
	big, err := r.Create(ctx, padded("team-b", "big", 3000))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Create(ctx, padded("team-b", "more", 1500))
	mustForbidLimit(t, err, "spec.limits.bytes", `namespace "team-b" has reached its limit of 4096 bytes (spec.limits.bytes): it holds `)
	grown := padded("team-b", "big", 4000)
	if _, err := r.Update(ctx, grown); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("an update that grows past the limit: %v", err)
	}
	if _, err := r.Patch(ctx, testkit.KindWidget, "team-b", "big", []byte(`{"spec":{"pad":"`+strings.Repeat("y", 4000)+`"}}`), false); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("a patch that grows past the limit: %v", err)
	}
	shrunk := padded("team-b", "big", 1000)
	shrunk.ResourceVersion = big.ResourceVersion
	if _, err := r.Update(ctx, shrunk); err != nil {
		t.Fatalf("an update that shrinks: %v", err)
	}
	if _, err := r.Create(ctx, padded("team-b", "more", 1500)); err != nil {
		t.Fatalf("create once there is room: %v", err)
	}
	if u := usageOf(t, r, "team-b"); u.Objects != 2 || u.Bytes < 2500 || u.Bytes > 4096 {
		t.Fatalf("usage %+v, want 2 objects within 4096 bytes", u)
	}
}

func TestNamespaceLimits_OptionsDefaultsApplyToNamespacesThatDeclareNone(t *testing.T) {
	r := newLimited(t).start(t, registry.Options{NamespaceMaxObjects: 3, NamespaceMaxBytes: 5000})
	ctx := sysCtx()
	for _, ns := range []string{"plain", "more"} {
		spec := `{}`
		if ns == "more" {
			spec = `{"limits":{"objects":4}}`
		}
		if _, err := r.Create(ctx, namespaceWith(ns, spec)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct{ ns, field, want string }{
		{"default", "spec.limits.objects", `namespace "default" has reached its limit of 3 objects (spec.limits.objects is unset: the server's default applies)`},
		{"plain", "spec.limits.objects", `namespace "plain" has reached its limit of 3 objects (spec.limits.objects is unset`},
		{"more", "spec.limits.objects", `namespace "more" has reached its limit of 4 objects (spec.limits.objects)`},
	}
	for _, c := range cases {
		t.Run(c.ns, func(t *testing.T) {
			var i int
			var err error
			for i = 0; err == nil && i < 10; i++ {
				_, err = r.Create(ctx, testkit.Widget(c.ns, fmt.Sprintf("w%d", i)))
			}
			mustForbidLimit(t, err, c.field, c.want)
		})
	}
	if _, _, err := r.Delete(ctx, testkit.KindWidget, "default", "w0", api.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	_, err := r.Create(ctx, padded("default", "huge", 6000))
	mustForbidLimit(t, err, "spec.limits.bytes", `namespace "default" has reached its limit of 5000 bytes (spec.limits.bytes is unset`)
	u := usageOf(t, r, "plain")
	if u.Limits.Objects == nil || *u.Limits.Objects != 3 || u.Limits.Bytes == nil || u.Limits.Bytes.Value() != 5000 {
		t.Fatalf("limits in force %+v, want the defaults 3 objects and 5000 bytes", u.Limits)
	}
}

func TestNamespaceLimits_BuiltInDefaultsAndNone(t *testing.T) {
	l := newLimited(t)
	u := usageOf(t, l.start(t, registry.Options{}), "default")
	if *u.Limits.Objects != registry.DefaultNamespaceMaxObjects || u.Limits.Bytes.Value() != registry.DefaultNamespaceMaxBytes {
		t.Fatalf("limits %+v, want the built-in defaults", u.Limits)
	}
	if u := usageOf(t, l.start(t, registry.Options{NamespaceMaxObjects: -1, NamespaceMaxBytes: -1}), "default"); u.Limits.Objects != nil || u.Limits.Bytes != nil {
		t.Fatalf("limits %+v, want none", u.Limits)
	}
}

func TestNamespaceLimits_TxnCountsItsWritesTogetherAndIsRefusedWhole(t *testing.T) {
	r := newLimited(t).start(t, registry.Options{})
	ctx := sysCtx()
	if _, err := r.Create(ctx, namespaceWith("team-c", `{"limits":{"objects":5}}`)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := r.Create(ctx, testkit.Widget("team-c", fmt.Sprintf("w%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	txn := r.Txn()
	for i := range 3 {
		txn.Create(testkit.Widget("team-c", fmt.Sprintf("t%d", i)))
	}
	_, err := txn.Commit(ctx)
	mustForbidLimit(t, err, "spec.limits.objects", `it holds 3 and this write adds 3`)
	if list, err := r.List(ctx, testkit.KindWidget, "team-c", api.ListOptions{}); err != nil || len(list.Items) != 3 {
		t.Fatalf("after the refused txn: %d widgets, %v; want the 3 of before", len(list.Items), err)
	}
	// A delete and a create in one transaction at the limit: no growth.
	txn = r.Txn()
	txn.Create(testkit.Widget("team-c", "t0"))
	txn.Create(testkit.Widget("team-c", "t1"))
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	txn = r.Txn()
	txn.Delete(testkit.KindWidget, "team-c", "w0", api.DeleteOptions{Force: true})
	txn.Create(testkit.Widget("team-c", "swap"))
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatalf("delete + create at the limit: %v", err)
	}
	if u := usageOf(t, r, "team-c"); u.Objects != 5 {
		t.Fatalf("usage %+v, want 5 objects", u)
	}
}

func TestNamespaceLimits_LoweredBelowUsageLetsOnlyShrinkingWritesPass(t *testing.T) {
	r := newLimited(t).start(t, registry.Options{})
	ctx := sysCtx()
	ns, err := r.Create(ctx, namespaceWith("team-d", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	var ws []*api.Object
	for i := range 4 {
		w, err := r.Create(ctx, padded("team-d", fmt.Sprintf("w%d", i), 500))
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	ns.SetField(api.FieldSpec, []byte(`{"limits":{"objects":2,"bytes":1000}}`))
	if _, err := r.Update(ctx, ns); err != nil {
		t.Fatalf("lowering the limits below the usage: %v", err)
	}
	if _, err := r.Create(ctx, testkit.Widget("team-d", "new")); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("create over the lowered limit: %v", err)
	}
	same := ws[0].DeepCopy()
	same.Labels = map[string]string{"a": "b"}
	if _, err := r.Update(ctx, same); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("an update that grows over the lowered limit: %v", err)
	}
	if _, err := r.UpdateStatus(ctx, testkit.Widget("team-d", "w1", testkit.Status(`{"phase":"Ready"}`))); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("a status write that grows over the lowered limit: %v", err)
	}
	shrunk := padded("team-d", "w1", 10)
	if _, err := r.Update(ctx, shrunk); err != nil {
		t.Fatalf("an update that shrinks: %v", err)
	}
	// Deleting, and writing to what is being deleted, always pass.
	if _, _, err := r.Delete(ctx, testkit.KindWidget, "team-d", "w2", api.DeleteOptions{}); err != nil {
		t.Fatalf("deletion mark: %v", err)
	}
	if _, err := r.UpdateStatus(ctx, testkit.Widget("team-d", "w2", testkit.Status(`{"phase":"Removing the things it made"}`))); err != nil {
		t.Fatalf("a status write to a deleting object: %v", err)
	}
	if _, err := r.Patch(ctx, testkit.KindWidget, "team-d", "w2", []byte(`{"metadata":{"finalizers":null}}`), false); err != nil {
		t.Fatalf("finalizer removal: %v", err)
	}
	if u := usageOf(t, r, "team-d"); u.Objects != 3 {
		t.Fatalf("usage %+v, want 3 objects once w2 is gone", u)
	}
}

func TestNamespaceLimits_TwoServersOnOneStoreCountEachOthersWrites(t *testing.T) {
	l := newLimited(t)
	a, b := l.start(t, registry.Options{}), l.start(t, registry.Options{})
	ctx := sysCtx()
	if _, err := a.Create(ctx, namespaceWith("shared", `{"limits":{"objects":5}}`)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := a.Create(ctx, testkit.Widget("shared", fmt.Sprintf("a%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "server b to count server a's 3 objects and see the limit", func() bool {
		u := usageOf(t, b, "shared")
		return u.Objects == 3 && u.Limits.Objects != nil && *u.Limits.Objects == 5
	})
	for i := range 2 {
		if _, err := b.Create(ctx, testkit.Widget("shared", fmt.Sprintf("b%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Create(ctx, testkit.Widget("shared", "b2")); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("server b over the limit: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, "server a to count server b's objects", func() bool {
		return usageOf(t, a, "shared").Objects == 5
	})
	if _, err := a.Create(ctx, testkit.Widget("shared", "a-late")); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("server a over the limit: %v", err)
	}
	if _, _, err := b.Delete(ctx, testkit.KindWidget, "shared", "a0", api.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "server a to count server b's delete", func() bool {
		return usageOf(t, a, "shared").Objects == 4
	})
}

func TestNamespaceLimits_UsageIsCountedAgainAfterARestart(t *testing.T) {
	l := newLimited(t)
	ctx := sysCtx()
	first := l.start(t, registry.Options{})
	if _, err := first.Create(ctx, namespaceWith("team-e", `{"limits":{"objects":5}}`)); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, err := first.Create(ctx, padded("team-e", fmt.Sprintf("w%d", i), 100*i)); err != nil {
			t.Fatal(err)
		}
	}
	bytes := usageOf(t, first, "team-e").Bytes
	first.Close()

	again := l.start(t, registry.Options{})
	if u := usageOf(t, again, "team-e"); u.Objects != 4 || u.Bytes != bytes {
		t.Fatalf("after a restart: usage %+v, want 4 objects and %d bytes", u, bytes)
	}
	if _, err := again.Create(ctx, testkit.Widget("team-e", "w4")); err != nil {
		t.Fatal(err)
	}
	if _, err := again.Create(ctx, testkit.Widget("team-e", "w5")); !errors.Is(err, api.ErrForbidden) {
		t.Fatalf("sixth object after a restart: %v", err)
	}
}

// TestNamespaceLimits_ConcurrentCreatesStayWithinTheDocumentedBound: one
// server never lets concurrent creates past a limit; N servers sharing a
// store at most N times the limit (package registry/internal/usage).
func TestNamespaceLimits_ConcurrentCreatesStayWithinTheDocumentedBound(t *testing.T) {
	const limit, writers = 5, 64
	l := newLimited(t)
	a, b := l.start(t, registry.Options{}), l.start(t, registry.Options{})
	ctx := sysCtx()
	for _, ns := range []string{"one", "two"} {
		if _, err := a.Create(ctx, namespaceWith(ns, fmt.Sprintf(`{"limits":{"objects":%d}}`, limit))); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "server b to see the namespaces' limits", func() bool {
		u := usageOf(t, b, "two")
		return u.Limits.Objects != nil && *u.Limits.Objects == limit
	})
	race := func(ns string, servers ...*registry.Registry) int64 {
		var ok atomic.Int64
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				_, err := servers[i%len(servers)].Create(ctx, testkit.Widget(ns, fmt.Sprintf("w%d", i)))
				switch {
				case err == nil:
					ok.Add(1)
				case !errors.Is(err, api.ErrForbidden):
					t.Errorf("create %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		return ok.Load()
	}
	if n := race("one", a); n != limit {
		t.Fatalf("one server: %d of %d concurrent creates passed, want exactly %d", n, writers, limit)
	}
	if n := race("two", a, b); n < limit || n > 2*limit {
		t.Fatalf("two servers: %d of %d concurrent creates passed, want %d to %d", n, writers, limit, 2*limit)
	}
	for _, r := range []*registry.Registry{a, b} {
		if _, err := r.Create(ctx, testkit.Widget("two", "after")); !errors.Is(err, api.ErrForbidden) {
			t.Fatalf("a create once the race is over: %v", err)
		}
	}
}

func TestNamespaceLimits_InvalidLimitsAreFieldErrors(t *testing.T) {
	r := newLimited(t).start(t, registry.Options{})
	cases := []struct{ name, spec, field string }{
		{"negative objects", `{"limits":{"objects":-1}}`, "spec.limits.objects"},
		{"fractional objects", `{"limits":{"objects":1.5}}`, "spec.limits.objects"},
		{"objects as a string", `{"limits":{"objects":"5"}}`, "spec.limits.objects"},
		{"negative bytes", `{"limits":{"bytes":"-1Ki"}}`, "spec.limits.bytes"},
		{"bytes not a quantity", `{"limits":{"bytes":"lots"}}`, "spec.limits.bytes"},
		{"fractional bytes", `{"limits":{"bytes":"100m"}}`, "spec.limits.bytes"},
		{"bytes as an object", `{"limits":{"bytes":{"value":1}}}`, "spec.limits.bytes"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := r.Create(sysCtx(), namespaceWith(fmt.Sprintf("bad%d", i), c.spec))
			var st *api.Status
			if !errors.As(err, &st) || st.Reason != api.ReasonInvalid || st.Details == nil ||
				len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != c.field {
				t.Fatalf("want Invalid naming %s, got %v (%+v)", c.field, err, st)
			}
		})
	}
	for i, spec := range []string{`{"limits":{"objects":0,"bytes":0}}`, `{"limits":{"bytes":1048576}}`, `{"limits":{"bytes":"256Mi"}}`, `{"limits":{}}`} {
		if _, err := r.Create(sysCtx(), namespaceWith(fmt.Sprintf("good%d", i), spec)); err != nil {
			t.Fatalf("valid limits %s: %v", spec, err)
		}
	}
}

func TestNamespace_UsageIsShownOnGetAndNeverStored(t *testing.T) {
	l := newLimited(t)
	r := l.start(t, registry.Options{NamespaceMaxBytes: 1 << 20})
	ctx := sysCtx()
	if _, err := r.Create(ctx, namespaceWith("team-f", `{"limits":{"objects":10}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Create(ctx, padded("team-f", "w", 200)); err != nil {
		t.Fatal(err)
	}
	u := usageOf(t, r, "team-f")
	if u.Objects != 1 || u.Bytes < 200 || *u.Limits.Objects != 10 || u.Limits.Bytes.String() != "1Mi" || u.ObservedRevision == "" {
		t.Fatalf("usage %+v", u)
	}
	ns, err := r.Get(ctx, api.KindNamespace, "", "team-f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.UpdateStatus(ctx, ns); err != nil {
		t.Fatal(err)
	}
	kv, err := l.s.Get(context.Background(), registry.KeyPrefix+"namespaces/team-f")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(kv.Value), "usage") {
		t.Fatalf("status.usage was stored: %s", kv.Value)
	}
}

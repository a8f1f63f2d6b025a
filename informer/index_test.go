package informer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/server/servertest"
)

// startWithWidgets starts a server that serves the Widget test kind too.
func startWithWidgets(t *testing.T) *servertest.Server {
	return servertest.Start(t, servertest.WithKinds(append(kinds.All(kinds.Deps{}), testkit.WidgetKind())...))
}

// refsIndex is the name of the index of Widgets by the names in spec.refs:
// the objects a Widget refers to, as a controller would index them.
const refsIndex = "refs"

func indexRefs(o *api.Object) []string {
	var spec struct {
		Refs []string `json:"refs"`
	}
	if err := json.Unmarshal(o.Field(api.FieldSpec), &spec); err != nil {
		return nil
	}
	return spec.Refs
}

func refs(names ...string) testkit.Opt {
	return testkit.SpecOf(map[string][]string{"refs": names})
}

func mustCreate(t *testing.T, c client.Interface, o *api.Object) *api.Object {
	t.Helper()
	got, err := c.Create(testkit.Context(t), o)
	if err != nil {
		t.Fatalf("create %s %s: %v", o.Kind, o.Name, err)
	}
	return got
}

func patchWidget(t *testing.T, c client.Interface, ns, name, patch string) {
	t.Helper()
	if _, err := c.Patch(testkit.Context(t), testkit.KindWidget, ns, name, []byte(patch), false); err != nil {
		t.Fatalf("patch %s/%s: %v", ns, name, err)
	}
}

func deleteWidget(t *testing.T, c client.Interface, ns, name string) {
	t.Helper()
	if _, _, err := c.Delete(testkit.Context(t), testkit.KindWidget, ns, name, api.DeleteOptions{Force: true}); err != nil {
		t.Fatalf("delete %s/%s: %v", ns, name, err)
	}
}

// keys returns the keys of objs, in their order.
func keys(objs []*api.Object) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, key(o))
	}
	return out
}

// indexState is what every index of an informer holds: index name → value
// → sorted object keys.
type indexState map[string]map[string][]string

// readIndexes reads every value of the named indexes through IndexValues
// and ByIndex, and checks that IndexKeys agrees with ByIndex.
func readIndexes(inf *informer.Informer, names ...string) (indexState, error) {
	st := indexState{}
	for _, name := range names {
		values, err := inf.IndexValues(name)
		if err != nil {
			return nil, err
		}
		st[name] = map[string][]string{}
		for _, v := range values {
			objs, err := inf.ByIndex(name, v)
			if err != nil {
				return nil, err
			}
			ks, err := inf.IndexKeys(name, v)
			if err != nil {
				return nil, err
			}
			if !slices.Equal(keys(objs), ks) {
				return nil, fmt.Errorf("index %s[%s]: ByIndex %v but IndexKeys %v", name, v, keys(objs), ks)
			}
			st[name][v] = ks
		}
	}
	return st, nil
}

// scanIndexes computes, by scanning List, what the indexes should hold.
func scanIndexes(inf *informer.Informer, funcs map[string]informer.IndexFunc) indexState {
	st := indexState{}
	for name, f := range funcs {
		st[name] = map[string][]string{}
		for _, o := range inf.List() {
			for _, v := range f(o) {
				if !slices.Contains(st[name][v], key(o)) {
					st[name][v] = append(st[name][v], key(o))
				}
			}
		}
	}
	return st
}

func (st indexState) String() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(st)) {
		fmt.Fprintf(&b, "%s{", name)
		for _, v := range slices.Sorted(maps.Keys(st[name])) {
			fmt.Fprintf(&b, " %s:%v", v, st[name][v])
		}
		b.WriteString(" } ")
	}
	return b.String()
}

func equalStates(a, b indexState) bool {
	return maps.EqualFunc(a, b, func(x, y map[string][]string) bool {
		return maps.EqualFunc(x, y, slices.Equal[[]string])
	})
}

// waitIndexes waits until the informer's indexes hold want, and checks that
// they agree with a scan of the cache.
func waitIndexes(t *testing.T, inf *informer.Informer, funcs map[string]informer.IndexFunc, what string, want indexState) {
	t.Helper()
	names := slices.Sorted(maps.Keys(funcs))
	var last indexState
	var lastErr error
	defer func() { // also when Eventually fails the test
		if t.Failed() {
			t.Logf("%s: indexes last read %v (err %v), want %v", what, last, lastErr, want)
		}
	}()
	testkit.Eventually(t, waitTimeout, what, func() bool {
		last, lastErr = readIndexes(inf, names...)
		return lastErr == nil && equalStates(last, want)
	})
	if scan := scanIndexes(inf, funcs); !equalStates(scan, want) {
		t.Errorf("%s: a scan of the cache gives %v, want %v", what, scan, want)
	}
}

func TestInformer_IndexesFollowAddsUpdatesDeletesAndRelist(t *testing.T) {
	srv := startWithWidgets(t)
	var net partition
	c := net.client(t, srv)
	lc := local.New(srv.Registry, identity.System())
	mustCreate(t, lc, testkit.Object(api.KindNamespace, "", "other"))
	o1 := mustCreate(t, lc, testkit.Secret("default", "owner1", nil))
	o2 := mustCreate(t, lc, testkit.Secret("default", "owner2", nil))
	mustCreate(t, lc, testkit.Widget("default", "w1", testkit.OwnedBy(o1), refs("a")))
	mustCreate(t, lc, testkit.Widget("default", "w2", testkit.OwnedBy(o1, o2), refs("a", "b")))
	mustCreate(t, lc, testkit.Widget("other", "w3", refs("b")))

	funcs := map[string]informer.IndexFunc{
		informer.OwnerUIDIndex:  informer.IndexOwnerUID,
		informer.NamespaceIndex: informer.IndexNamespace,
		refsIndex:               indexRefs,
	}
	inf := informer.New(c, testkit.KindWidget, "", informer.Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	// One index before Run, the others after the first list: both are
	// built over what is cached and kept current.
	if err := inf.AddIndex(informer.OwnerUIDIndex, informer.IndexOwnerUID); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(t)
	inf.AddEventHandler(rec.handler())
	run(t, inf)
	for _, name := range []string{informer.NamespaceIndex, refsIndex} {
		if err := inf.AddIndex(name, funcs[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := inf.AddIndex(refsIndex, indexRefs); !errors.Is(err, informer.ErrIndexExists) {
		t.Errorf("AddIndex of a taken name = %v, want ErrIndexExists", err)
	}
	if _, err := inf.ByIndex("nope", "x"); !errors.Is(err, informer.ErrNoIndex) {
		t.Errorf("ByIndex of an unknown index = %v, want ErrNoIndex", err)
	}
	if objs, err := inf.ByIndex(refsIndex, "unknown-value"); err != nil || len(objs) != 0 {
		t.Errorf("ByIndex of an unknown value = %v, %v, want none", objs, err)
	}

	waitIndexes(t, inf, funcs, "the indexes after the first list", indexState{
		informer.OwnerUIDIndex:  {o1.UID: {"default/w1", "default/w2"}, o2.UID: {"default/w2"}},
		informer.NamespaceIndex: {"default": {"default/w1", "default/w2"}, "other": {"other/w3"}},
		refsIndex:               {"a": {"default/w1", "default/w2"}, "b": {"default/w2", "other/w3"}},
	})
	if n := inf.Len(); n != 3 {
		t.Errorf("Len = %d, want 3", n)
	}

	// Changes seen by the watch.
	patchWidget(t, lc, "default", "w1", `{"spec":{"refs":["b"]}}`)
	ref2, _ := json.Marshal([]api.OwnerReference{api.OwnerRefTo(o2, false)})
	patchWidget(t, lc, "default", "w2", `{"metadata":{"ownerReferences":`+string(ref2)+`}}`)
	deleteWidget(t, lc, "other", "w3")
	mustCreate(t, lc, testkit.Widget("default", "w4", testkit.OwnedBy(o2), refs("a")))
	waitIndexes(t, inf, funcs, "the indexes after updates, a delete and an add", indexState{
		informer.OwnerUIDIndex:  {o1.UID: {"default/w1"}, o2.UID: {"default/w2", "default/w4"}},
		informer.NamespaceIndex: {"default": {"default/w1", "default/w2", "default/w4"}},
		refsIndex:               {"a": {"default/w2", "default/w4"}, "b": {"default/w1", "default/w2"}},
	})

	// Changes missed while disconnected, past a compaction: the informer
	// lists again, and the indexes follow the difference.
	waitWatching(t, srv)
	rec.mu.Lock()
	w1Updates := rec.updates["default/w1"]
	rec.mu.Unlock()
	net.cut(srv)
	deleteWidget(t, lc, "default", "w4")
	patchWidget(t, lc, "default", "w1", `{"spec":{"refs":["x"]}}`)
	patchWidget(t, lc, "default", "w1", `{"spec":{"refs":["c"]}}`) // a relist sees only this one
	mustCreate(t, lc, testkit.Widget("default", "w5", testkit.OwnedBy(o1), refs("a")))
	mustCreate(t, lc, testkit.Widget("other", "w6", refs("a")))
	deleteWidget(t, lc, "default", "w2")
	w2 := mustCreate(t, lc, testkit.Widget("default", "w2", testkit.OwnedBy(o1), refs("d"))) // a new incarnation
	ctx := testkit.Context(t)
	rev, err := srv.Store.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Store.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	net.heal()
	waitIndexes(t, inf, funcs, "the indexes after a relist", indexState{
		informer.OwnerUIDIndex:  {o1.UID: {"default/w1", "default/w2", "default/w5"}},
		informer.NamespaceIndex: {"default": {"default/w1", "default/w2", "default/w5"}, "other": {"other/w6"}},
		refsIndex:               {"a": {"default/w5", "other/w6"}, "c": {"default/w1"}, "d": {"default/w2"}},
	})
	rec.mu.Lock()
	if n := rec.updates["default/w1"] - w1Updates; n != 1 {
		t.Errorf("w1 updated %d times across the cut, want 1 (the changes should come from a relist)", n)
	}
	rec.mu.Unlock()
	if objs, _ := inf.ByIndex(informer.OwnerUIDIndex, o1.UID); len(objs) != 3 || objs[1].UID != w2.UID {
		t.Errorf("ByIndex returned %v, want the new incarnation of w2 among them", keys(objs))
	}
	if n := inf.Len(); n != 4 {
		t.Errorf("Len = %d, want 4", n)
	}
}

func TestIndexFuncs_IndexOwnersAndNamespace(t *testing.T) {
	owner := func(uid string) *api.Object {
		o := testkit.Secret("ns", "o-"+uid, nil)
		o.UID = uid
		return o
	}
	tests := []struct {
		name       string
		obj        *api.Object
		owners, ns []string
	}{
		{"no owners", testkit.Widget("ns", "w"), []string{}, []string{"ns"}},
		{"two owners", testkit.Widget("ns", "w", testkit.OwnedBy(owner("u1")), testkit.ControlledBy(owner("u2"))), []string{"u1", "u2"}, []string{"ns"}},
		{"reference without uid", testkit.Widget("ns", "w", testkit.OwnedBy(owner(""))), []string{}, []string{"ns"}},
		{"cluster-scoped", testkit.Object(api.KindNamespace, "", "n"), []string{}, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := informer.IndexOwnerUID(tt.obj); !slices.Equal(got, tt.owners) {
				t.Errorf("IndexOwnerUID = %v, want %v", got, tt.owners)
			}
			if got := informer.IndexNamespace(tt.obj); !slices.Equal(got, tt.ns) {
				t.Errorf("IndexNamespace = %v, want %v", got, tt.ns)
			}
		})
	}
}

func TestInformer_IndexAddedWhileChangesFlowMatchesTheCache(t *testing.T) {
	srv := startWithWidgets(t)
	c := local.New(srv.Registry, identity.System())
	inf := informer.New(c, testkit.KindWidget, "default", informer.Options{})
	run(t, inf)

	const widgets = 40
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := range widgets {
			name := fmt.Sprintf("w%02d", n)
			if _, err := c.Create(context.Background(), testkit.Widget("default", name, refs(fmt.Sprint(n%3)))); err != nil {
				t.Errorf("create %s: %v", name, err)
				return
			}
		}
	}()
	testkit.Eventually(t, waitTimeout, "some widgets cached", func() bool { return inf.Len() >= widgets/4 })
	if err := inf.AddIndex(refsIndex, indexRefs); err != nil {
		t.Fatal(err)
	}
	<-done
	testkit.Eventually(t, waitTimeout, "every widget cached", func() bool { return inf.Len() == widgets })
	got, err := readIndexes(inf, refsIndex)
	if err != nil {
		t.Fatal(err)
	}
	want := scanIndexes(inf, map[string]informer.IndexFunc{refsIndex: indexRefs})
	if !equalStates(got, want) || len(got[refsIndex]["0"]) != (widgets+2)/3 {
		t.Errorf("index %v, want %v (a scan of the cache)", got, want)
	}
}

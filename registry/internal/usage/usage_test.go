package usage

import (
	"errors"
	"strconv"
	"testing"
)

const (
	prefix   = "/cairn/objects/"
	nsPrefix = prefix + "namespaces/"
)

// started is a Tracker whose state is built by hand, as Start's list would
// have left it at revision rev, without a store.
func started(defaults Limits, rev int64) *Tracker {
	t := New(nil, Options{Prefix: prefix, NamespacePrefix: nsPrefix, Defaults: defaults})
	t.st = newState()
	t.st.advance(rev)
	return t
}

// watched applies c as the watch delivers it at rev.
func (t *Tracker) watched(c Change, rev int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.classify(&c) {
		t.st.apply(&c, rev, true)
	}
	t.st.advance(rev)
}

func key(ns, name string) string { return prefix + "widgets/" + ns + "/" + name }

func none() Limits { return Limits{Objects: Unset, Bytes: Unset} }

func TestClassify_CountsNamespacedKeysAndReadsNamespaceObjects(t *testing.T) {
	tr := New(nil, Options{Prefix: prefix, NamespacePrefix: nsPrefix})
	cases := []struct {
		key       string
		ok        bool
		ns        string
		namespace bool
	}{
		{prefix + "secrets/team-a/db", true, "team-a", false},
		{nsPrefix + "team-a", true, "team-a", true},
		{prefix + "leases/controllers", false, "", false},
		{"/cairn/meta/terminating-namespaces/team-a", false, "", false},
		{prefix + "secrets//x", false, "", false},
	}
	for _, c := range cases {
		ch := Change{Key: c.key}
		if ok := tr.classify(&ch); ok != c.ok || (ok && (ch.ns != c.ns || ch.namespace != c.namespace)) {
			t.Errorf("%s: ok %v ns %q namespace %v; want %v %q %v", c.key, ok, ch.ns, ch.namespace, c.ok, c.ns, c.namespace)
		}
	}
}

func TestState_VersionsAppliedInAnyOrderLeaveTheNewestSizes(t *testing.T) {
	tr := started(none(), 10)
	// This server's commit at 14 counts at once; the watch then delivers an
	// older version (another server's, at 12) and that same commit.
	tr.commit(t, 14, Change{Key: key("a", "x"), Size: 100})
	tr.watched(Change{Key: key("a", "x"), Size: 40}, 12)
	tr.watched(Change{Key: key("a", "x"), Size: 100}, 14)
	if r := tr.Usage("a"); r.Objects != 1 || r.Bytes != 100 {
		t.Fatalf("usage %+v, want 1 object of 100 bytes", r)
	}
	// A deletion of this server's, ahead of the watch, is kept as a
	// tombstone: the older put the watch delivers next does not revive it.
	tr.commit(t, 20, Change{Key: key("a", "x"), Deleted: true})
	tr.watched(Change{Key: key("a", "x"), Size: 70}, 18)
	if r := tr.Usage("a"); r.Objects != 0 || r.Bytes != 0 {
		t.Fatalf("usage %+v after the delete, want nothing", r)
	}
	if len(tr.st.keys) != 1 {
		t.Fatalf("%d keys, want the tombstone", len(tr.st.keys))
	}
	tr.watched(Change{Key: key("a", "x"), Deleted: true}, 20)
	if len(tr.st.keys) != 0 || len(tr.st.tombs) != 0 || len(tr.st.ns) != 0 {
		t.Fatalf("the watch passed the delete: keys %d tombs %d namespaces %d, want none", len(tr.st.keys), len(tr.st.tombs), len(tr.st.ns))
	}
	// A commit the watch has already passed is not counted twice.
	tr.watched(Change{Key: key("a", "y"), Size: 5}, 25)
	tr.commit(t, 25, Change{Key: key("a", "y"), Size: 5})
	tr.watched(Change{Key: key("a", "z"), Size: 5}, 26)
	tr.watched(Change{Key: key("a", "z"), Deleted: true}, 27)
	tr.commit(t, 26, Change{Key: key("a", "z"), Size: 5})
	if r := tr.Usage("a"); r.Objects != 1 || r.Bytes != 5 {
		t.Fatalf("usage %+v, want y alone", r)
	}
}

// commit reserves and commits changes as the registry does for a write
// committed at rev.
func (tr *Tracker) commit(t *testing.T, rev int64, changes ...Change) {
	t.Helper()
	res, err := tr.Reserve(changes)
	if err != nil {
		t.Fatal(err)
	}
	res.Commit(rev)
}

func TestReserve_WritesInFlightHoldTheirGrowth(t *testing.T) {
	tr := started(Limits{Objects: 2, Bytes: Unset}, 1)
	first, err := tr.Reserve([]Change{{Key: key("a", "1"), Size: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Reserve([]Change{{Key: key("a", "2"), Size: 1}}); err != nil {
		t.Fatal(err)
	}
	var ex *ExceededError
	_, err = tr.Reserve([]Change{{Key: key("a", "3"), Size: 1}})
	if !errors.As(err, &ex) || ex.Usage != 2 || ex.Adds != 1 || ex.Limit != 2 || !ex.Default {
		t.Fatalf("a third create while two are in flight: %v", err)
	}
	first.Cancel()
	if _, err := tr.Reserve([]Change{{Key: key("a", "3"), Size: 1}}); err != nil {
		t.Fatalf("once a write in flight failed: %v", err)
	}
}

func TestReserve_ChecksTheDeclaredLimitsAndLetsShrinkingAndExemptWritesPass(t *testing.T) {
	tr := started(none(), 1)
	tr.commit(t, 2, Change{Key: nsPrefix + "a", Limits: Limits{Objects: Unset, Bytes: 100}})
	tr.commit(t, 3, Change{Key: key("a", "x"), Size: 90})
	cases := []struct {
		name    string
		changes []Change
		refused bool
	}{
		{"growth", []Change{{Key: key("a", "x"), Size: 101}}, true},
		{"create", []Change{{Key: key("a", "y"), Size: 11}}, true},
		{"same size", []Change{{Key: key("a", "x"), Size: 90}}, false},
		{"shrink", []Change{{Key: key("a", "x"), Size: 80}}, false},
		{"exempt growth", []Change{{Key: key("a", "x"), Size: 200, Exempt: true}}, false},
		{"create and delete together", []Change{{Key: key("a", "x"), Deleted: true}, {Key: key("a", "y"), Size: 50}}, false},
		{"another namespace", []Change{{Key: key("b", "x"), Size: 1000}}, false},
	}
	for _, c := range cases {
		res, err := tr.Reserve(c.changes)
		var ex *ExceededError
		if refused := errors.As(err, &ex); refused != c.refused {
			t.Errorf("%s: refused %v (%v), want %v", c.name, refused, err, c.refused)
		}
		res.Cancel()
	}
	if r := tr.Usage("a"); r.Objects != 1 || r.Bytes != 90 || r.Limits.Bytes != 100 {
		t.Fatalf("usage %+v: reservations were not all released", r)
	}
	// The Namespace's deletion forgets its limits.
	tr.commit(t, 4, Change{Key: nsPrefix + "a", Deleted: true})
	if r := tr.Usage("a"); r.Limits.Bytes != Unset {
		t.Fatalf("limits %+v after the Namespace is gone, want the defaults", r.Limits)
	}
}

func TestExceededError_NamesTheNamespaceLimitUsageAndField(t *testing.T) {
	cases := []struct {
		e    ExceededError
		want string
	}{
		{ExceededError{Namespace: "team-a", Resource: "objects", Limit: 100, Usage: 100, Adds: 1},
			`namespace "team-a" has reached its limit of 100 objects (spec.limits.objects): it holds 100 and this write adds 1`},
		{ExceededError{Namespace: "team-a", Resource: "bytes", Limit: 1024, Default: true, Usage: 1000, Adds: 30},
			`namespace "team-a" has reached its limit of 1024 bytes (spec.limits.bytes is unset: the server's default applies): it holds 1000 bytes and this write adds 30`},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

// BenchmarkReserveCommitWatched: the tracker's own work for one create, as
// the registry and the watch do it (reserve, commit, the watch's copy).
func BenchmarkReserveCommitWatched(b *testing.B) {
	tr := started(Limits{Objects: int64(b.N) + 1, Bytes: Unset}, 1)
	keys := make([]string, b.N)
	for i := range keys {
		keys[i] = key("bench", "w"+strconv.Itoa(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		res, err := tr.Reserve([]Change{{Key: keys[i], Size: 400}})
		if err != nil {
			b.Fatal(err)
		}
		res.Commit(int64(i + 2))
		tr.watched(Change{Key: keys[i], Size: 400}, int64(i+2))
	}
}

package trace_test

import (
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/trace"
)

// TestStore_NewUIDDropsThePredecessorsReconciles: a reconcile of another
// uid under the same name starts the object's ring afresh; reconciles
// that know no uid are added to the current one.
func TestStore_NewUIDDropsThePredecessorsReconciles(t *testing.T) {
	s := trace.NewStore(10, 10)
	ref := api.ObjectReference{Kind: api.KindCleaner, Namespace: "previews", Name: "preview-42"}
	s.Add(ref, api.TraceReconcile{Controller: "cleaner", UID: "old", Result: "deleted itself"})
	s.Add(ref, api.TraceReconcile{Controller: "cleaner", Result: "not found"})
	s.Add(ref, api.TraceReconcile{Controller: "cleaner", UID: "new", Result: "waiting"})
	s.Add(ref, api.TraceReconcile{Controller: "cleaner", Result: "no uid known"})
	tr, _ := s.Get(ref.Kind, ref.Namespace, ref.Name)
	var got []string
	for _, r := range tr.Reconciles {
		got = append(got, r.Result)
	}
	if len(got) != 2 || got[0] != "waiting" || got[1] != "no uid known" {
		t.Errorf("reconciles = %q, want the new uid's two", got)
	}
}

func TestTraceOf_KeepsOnlyTheIncarnationAsked(t *testing.T) {
	created := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	tr := &api.Trace{Reconciles: []api.TraceReconcile{
		{Result: "a", UID: "old", Start: created.Add(-time.Minute)},
		{Result: "b", Start: created.Add(-time.Second)},
		{Result: "c", UID: "new", Start: created.Add(time.Second)},
		{Result: "d", Start: created.Add(2 * time.Second)},
		{Result: "e", UID: "old", Start: created.Add(3 * time.Second)},
	}}
	cases := []struct {
		uid  string
		want string
	}{
		{uid: "new", want: "cd"},
		{uid: "", want: "abcde"}, // the object is gone: everything remembered
		{uid: "other", want: "d"},
	}
	for _, c := range cases {
		var got string
		for _, r := range tr.Of(c.uid, created).Reconciles {
			got += r.Result
		}
		if got != c.want {
			t.Errorf("Of(%q) = %q, want %q", c.uid, got, c.want)
		}
	}
	if len(tr.Reconciles) != 5 {
		t.Error("Of modified the trace")
	}
}

func TestRound_DurationsForPeople(t *testing.T) {
	cases := []struct {
		in   time.Duration
		want string
	}{
		{4*time.Minute + 59*time.Second + 999999123*time.Nanosecond, "5m0s"},
		{4*time.Minute + 59*time.Second + 990001234*time.Nanosecond, "4m59.99s"},
		{1234567890 * time.Nanosecond, "1.23s"},
		{12345678 * time.Nanosecond, "12ms"},
		{123456 * time.Nanosecond, "123µs"},
		{-1500 * time.Millisecond, "-1.5s"},
	}
	for _, c := range cases {
		if got := trace.Round(c.in).String(); got != c.want {
			t.Errorf("Round(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

package controller

import (
	"testing"
	"time"
)

func TestWritten_StaleOnlyBeforeTheLastWrite(t *testing.T) {
	var w Written
	if w.Stale("a", "5") {
		t.Fatal("stale with no write recorded")
	}
	w.Wrote("a", "10")
	w.Wrote("a", "7") // an older write does not move it back
	for _, tc := range []struct {
		key, rv string
		want    bool
	}{
		{"a", "9", true}, {"a", "10", false}, {"a", "11", false}, {"b", "1", false}, {"a", "x", false},
	} {
		if got := w.Stale(tc.key, tc.rv); got != tc.want {
			t.Errorf("Stale(%q, %q) = %v, want %v", tc.key, tc.rv, got, tc.want)
		}
	}
	w.Forget("a")
	if w.Stale("a", "9") {
		t.Fatal("stale after Forget")
	}
}

func TestWritten_MissingFromTheCacheIsStaleUntilExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	w := Written{now: func() time.Time { return now }}
	w.Wrote("a", "10")
	if w.Stale("b", "") || !w.Stale("a", "") {
		t.Fatal(`Stale(key, "") must say whether a write of key is recorded`)
	}
	now = now.Add(WrittenFor)
	if !w.Stale("a", "9") {
		t.Fatal("not stale within WrittenFor")
	}
	now = now.Add(time.Second)
	if w.Stale("a", "") || w.Stale("a", "9") {
		t.Fatal("stale after WrittenFor")
	}
}

func TestWritten_ForgetsAWriteOnceTheCacheShowedIt(t *testing.T) {
	var w Written
	w.Wrote("a", "10")
	if w.Stale("a", "10") {
		t.Fatal("stale at the version written")
	}
	if w.Stale("a", "") {
		t.Fatal("an object deleted after the cache showed the write is not stale")
	}
}

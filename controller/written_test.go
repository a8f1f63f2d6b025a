package controller

import "testing"

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

package unitlog_test

import (
	"strings"
	"testing"

	"cairn.dev/cairn/unitlog"
)

func TestTail_KeepsTheLastBytesFromARuneBoundary(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		max       int
		want      string
		cut       bool
	}{
		{"shorter", "abc", 5, "abc", false},
		{"exact", "abcde", 5, "abcde", false},
		{"longer", "abcdefgh", 3, "fgh", true},
		{"mid-rune", "aé€", 4, "€", true}, // é is 2 bytes, € 3: a cut inside é starts at €
		{"empty", "", 3, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := unitlog.Tail([]byte(tc.out), tc.max)
			if string(got) != tc.want || cut != tc.cut {
				t.Fatalf("Tail(%q, %d) = %q, %v; want %q, %v", tc.out, tc.max, got, cut, tc.want, tc.cut)
			}
		})
	}
}

func TestLines_QuotesTheLastNonEmptyLinesBounded(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		n, max    int
		want      string
	}{
		{"none", "", 3, 100, ""},
		{"blank lines", "\n  \n", 3, 100, ""},
		{"few", "a\n\nb\n", 3, 100, "a | b"},
		{"more than n", "1\n2\n3\n4\n", 2, 100, "… | 3 | 4"},
		{"bounded", "first line\n" + strings.Repeat("x", 50) + "\n", 2, 20, "…" + strings.Repeat("x", 20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unitlog.Lines([]byte(tc.out), tc.n, tc.max); got != tc.want {
				t.Fatalf("Lines(%q, %d, %d) = %q, want %q", tc.out, tc.n, tc.max, got, tc.want)
			}
		})
	}
}

func TestReadTail_HoldsTheEndOfALongStream(t *testing.T) {
	out := strings.Repeat("a", 200<<10) + "end"
	b, err := unitlog.ReadTail(strings.NewReader(out), 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := unitlog.Tail(b, 10); string(got) != "aaaaaaaend" || len(b) > 20+64<<10 {
		t.Fatalf("ReadTail kept %d bytes, tail %q", len(b), got)
	}
}

package api_test

import (
	"testing"

	"cairn.dev/cairn/api"
)

func TestSplitKey_ReadsWhatKeyMakes(t *testing.T) {
	for _, tc := range []struct{ ns, name string }{{"demo", "db"}, {"", "cluster-scoped"}, {"demo", ""}} {
		ns, name := api.SplitKey(api.Key(tc.ns, tc.name))
		if ns != tc.ns || name != tc.name {
			t.Fatalf("SplitKey(Key(%q, %q)) = %q, %q", tc.ns, tc.name, ns, name)
		}
	}
	if ns, name := api.SplitKey("a/b/c"); ns != "a" || name != "b/c" {
		t.Fatalf("SplitKey splits at the first slash: got %q, %q", ns, name)
	}
}

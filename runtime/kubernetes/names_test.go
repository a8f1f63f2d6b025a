package kubernetes

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestNameIsAStableValidDNSLabel(t *testing.T) {
	long := "ev-" + strings.Repeat("a", 100)
	cases := []struct {
		id, want string
	}{
		{"ev-0f4c5d6e-1a2b-4c3d-9e8f-001122334455", "ev-0f4c5d6e-1a2b-4c3d-9e8f-001122334455"},
		{"ev-1-build", "ev-1-build"},
		{"ev-1-my_job", ""},    // '_' replaced, hash added
		{"ev-1-my-job.v2", ""}, // '.' replaced, hash added
		{long, ""},
		{"_", ""},
	}
	seen := map[string]string{}
	for _, c := range cases {
		got := Name(c.id)
		if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
			t.Errorf("Name(%q) = %q: not a DNS label: %v", c.id, got, errs)
		}
		if c.want != "" && got != c.want {
			t.Errorf("Name(%q) = %q, want %q", c.id, got, c.want)
		}
		if c.want == "" && got == c.id {
			t.Errorf("Name(%q) kept the ID, want it changed", c.id)
		}
		if Name(c.id) != got {
			t.Errorf("Name(%q) is not stable", c.id)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("Name(%q) = Name(%q) = %q", c.id, other, got)
		}
		seen[got] = c.id
	}
	if Name("ev-1-a_b") == Name("ev-1-a-b") {
		t.Error("IDs differing in '_' and '-' share a name")
	}
}

func TestLabelValueKeepsDots(t *testing.T) {
	if got := labelValue("default.my-event"); got != "default.my-event" {
		t.Errorf("labelValue = %q", got)
	}
	got := labelValue("default." + strings.Repeat("x", 80))
	if errs := validation.IsValidLabelValue(got); len(errs) > 0 || len(got) > 63 {
		t.Errorf("labelValue = %q: %v", got, errs)
	}
}

package runtime_test

import (
	"errors"
	"strings"
	"testing"

	"cairn.dev/cairn/runtime"
)

func TestValidateID_AcceptsDNSLabelishIDsOnly(t *testing.T) {
	cases := map[string]bool{
		"a": true, "event-42.worker_1": true, "0abc": true, strings.Repeat("a", 200): true,
		"": false, "-a": false, ".": false, "..": false, "_a": false, "A": false, "a/b": false,
		"a b": false, "a\x00": false, strings.Repeat("a", 201): false,
	}
	for id, ok := range cases {
		err := runtime.ValidateID(id)
		if (err == nil) != ok || (err != nil && !errors.Is(err, runtime.ErrInvalid)) {
			t.Errorf("ValidateID(%q) = %v, want ok=%v (ErrInvalid otherwise)", id, err, ok)
		}
	}
}

func TestValidateRelPath_KeepsPathsInsideTheWorkspace(t *testing.T) {
	cases := []struct {
		in, clean string
		ok        bool
	}{
		{"a", "a", true},
		{"a/b/../c", "", false},
		{"./a//b", "a/b", true},
		{"..", "", false},
		{"a/..", "", false},
		{"/etc/passwd", "", false},
		{"", "", false},
		{"a\x00b", "", false},
	}
	for _, c := range cases {
		clean, err := runtime.ValidateRelPath("files", c.in)
		if (err == nil) != c.ok || clean != c.clean {
			t.Errorf("ValidateRelPath(%q) = %q, %v; want %q ok=%v", c.in, clean, err, c.clean, c.ok)
		}
		if err != nil && !errors.Is(err, runtime.ErrInvalid) {
			t.Errorf("ValidateRelPath(%q): %v does not wrap ErrInvalid", c.in, err)
		}
	}
}

func TestValidateSpec_ErrorsNeverQuoteEnvValues(t *testing.T) {
	err := runtime.ValidateSpec(runtime.Spec{ID: "a", Argv: []string{"x"}, Env: []string{"TOKEN=s3cret\x00"}})
	if !errors.Is(err, runtime.ErrInvalid) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("ValidateSpec: %v; want ErrInvalid without the value", err)
	}
}

func TestPhase_DoneForFinalAndUnknownPhases(t *testing.T) {
	for p, done := range map[runtime.Phase]bool{
		runtime.PhasePending: false, runtime.PhaseRunning: false, runtime.PhaseExited: true,
		runtime.PhaseFailed: true, runtime.PhaseLost: true, "Whatever": true,
	} {
		if p.Done() != done {
			t.Errorf("%s.Done() = %v, want %v", p, p.Done(), done)
		}
	}
}

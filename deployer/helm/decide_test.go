package helm

import (
	"strings"
	"testing"
)

func TestDecide_UpgradesOnlyOnAChangeOrAFailureOfAnEarlierRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		last *Release
		want Step
	}{
		{"no release", nil, StepInstall},
		{"uninstalled with history", &Release{Status: "uninstalled"}, StepInstall},
		{"deployed, same digest", &Release{Status: "deployed", Digest: "d1", Run: "old"}, StepObserve},
		{"deployed, other digest", &Release{Status: "deployed", Digest: "d0", Run: "old"}, StepUpgrade},
		{"deployed by hand (no label)", &Release{Status: "deployed"}, StepUpgrade},
		{"failed in this run", &Release{Status: "failed", Digest: "d1", Run: "run"}, StepFailed},
		{"failed in an earlier run", &Release{Status: "failed", Digest: "d1", Run: "old"}, StepUpgrade},
		{"pending install", &Release{Status: "pending-install", Digest: "d1", Run: "run"}, StepPending},
		{"pending upgrade", &Release{Status: "pending-upgrade"}, StepPending},
		{"uninstalling", &Release{Status: "uninstalling"}, StepPending},
	} {
		if got := Decide(tc.last, "d1", "run"); got != tc.want {
			t.Errorf("%s: Decide = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestDigest_ChangesWithChartOrValuesOnly(t *testing.T) {
	a, _ := Digest("c1", map[string]any{"a": 1, "b": map[string]any{"x": "y"}})
	b, _ := Digest("c1", map[string]any{"b": map[string]any{"x": "y"}, "a": 1})
	c, _ := Digest("c2", map[string]any{"a": 1, "b": map[string]any{"x": "y"}})
	d, _ := Digest("c1", map[string]any{"a": 2, "b": map[string]any{"x": "y"}})
	if a != b || a == c || a == d || len(a) > 63 {
		t.Fatalf("digests %s %s %s %s: want equal for equal inputs, different otherwise, label-sized", a, b, c, d)
	}
}

func TestParseConfig_NamesTheFieldAtFault(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{``, "spec.config is required"},
		{`{"chart":{}}`, "spec.config.chart needs exactly one of archive, repository or ref"},
		{`{"chart":{"ref":"oci://r/c:1","archive":{"inline":"aGk="}}}`, "exactly one of archive, repository or ref (it has 2)"},
		{`{"chart":{"archive":{"inline":"not base64!"}}}`, "spec.config.chart.archive.inline is not base64"},
		{`{"chart":{"repository":{"url":"ftp://x","name":"c"}}}`, "spec.config.chart.repository.url must be an http"},
		{`{"chart":{"repository":{"url":"https://x"}}}`, "spec.config.chart.repository.name is required"},
		{`{"chart":{"ref":"registry/c:1"}}`, "spec.config.chart.ref must be an oci:// reference"},
		{`{"chart":{"ref":"oci://r/c:1"},"release":{"name":"Bad_Name"}}`, "spec.config.release.name"},
		{`{"chart":{"ref":"oci://r/c:1"},"values":[1]}`, "spec.config.values must be an object"},
		{`{"chart":{"ref":"oci://r/c:1"},"exports":[{"key":"k"}]}`, "spec.config.exports[0]"},
		{`{"chart":{"ref":"oci://r/c:1"},"valuse":{}}`, `unknown field "valuse"`},
	} {
		_, err := ParseConfig([]byte(tc.config), "web")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config %s: error %v, want it to say %q", tc.config, err, tc.want)
		}
	}
	cfg, err := ParseConfig([]byte(`{"chart":{"ref":"oci://r/c:1"}}`), "web")
	if err != nil || cfg.Release.Name != "web" {
		t.Fatalf("a minimal config: %+v %v, want release name web", cfg, err)
	}
}

func TestRedactor_RemovesEveryStringValue(t *testing.T) {
	r := newRedactor(map[string]any{"db": map[string]any{"password": "hunter22", "user": "ab"}, "list": []any{"tok-123456"}})
	got := r.String(`Invalid value: "hunter22"; token tok-123456; user ab`)
	if strings.Contains(got, "hunter22") || strings.Contains(got, "tok-123456") || !strings.Contains(got, "user ab") {
		t.Fatalf("redacted: %q", got)
	}
}

package config

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValidateReadiness_NamesTheField(t *testing.T) {
	ok := ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Name: "a"}
	in := []json.RawMessage{json.RawMessage(`"x"`)}
	cases := []struct {
		name string
		r    Readiness
		want string
	}{
		{"valid", Readiness{Custom: []CustomCheck{{Name: "c", Resource: ok, JSONPath: ".data.a", In: in}}}, ""},
		{"no kind", Readiness{Custom: []CustomCheck{{Resource: ObjectRef{APIVersion: "v1", Name: "a"}, JSONPath: ".a", In: in}}}, "config.readiness.custom[0].resource.kind is required"},
		{"no path", Readiness{Custom: []CustomCheck{{Resource: ok, In: in}}}, "config.readiness.custom[0].jsonPath is required"},
		{"bad path", Readiness{Custom: []CustomCheck{{Resource: ok, JSONPath: "{.a", In: in}}}, "config.readiness.custom[0].jsonPath \"{.a\" does not parse"},
		{"no in", Readiness{Custom: []CustomCheck{{Resource: ok, JSONPath: ".a"}}}, "config.readiness.custom[0].in is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateReadiness(c.r, "config.readiness")
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("ValidateReadiness = %v, want %q", err, c.want)
			}
		})
	}
}

func TestValidateExports_NamesTheField(t *testing.T) {
	ok := &ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Name: "a"}
	cases := []struct {
		name       string
		ex         []Export
		fromValues bool
		want       string
	}{
		{"valid", []Export{{Key: "a", Resource: ok, JSONPath: ".data.a"}}, false, ""},
		{"no key", []Export{{Resource: ok, JSONPath: ".a"}}, false, "config.exports[0].key is required"},
		{"twice", []Export{{Key: "a", Resource: ok, JSONPath: ".a"}, {Key: "a", Resource: ok, JSONPath: ".b"}}, false, `config.exports[1].key "a" is exported twice`},
		{"no resource", []Export{{Key: "a", JSONPath: ".a"}}, false, "config.exports[0].resource is required"},
		{"no path", []Export{{Key: "a", Resource: ok}}, false, "config.exports[0].jsonPath is required"},
		{"fromValues refused", []Export{{Key: "a", FromValues: ".x"}}, false, "fromValues is for helm items only"},
		{"fromValues allowed", []Export{{Key: "a", FromValues: ".x"}}, true, ""},
		{"both", []Export{{Key: "a", FromValues: ".x", Resource: ok}}, true, "either fromValues or resource"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateExports(c.ex, "config.exports", c.fromValues)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("ValidateExports = %v, want %q", err, c.want)
			}
		})
	}
}

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]Policy{"": PolicyManage, "manage": PolicyManage, "keep": PolicyKeep, "ignore": PolicyIgnore} {
		if got, err := ParsePolicy(in); err != nil || got != want {
			t.Errorf("ParsePolicy(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParsePolicy("delete"); err == nil || !strings.Contains(err.Error(), "manage, keep, ignore") {
		t.Errorf("ParsePolicy(delete) = %v", err)
	}
}

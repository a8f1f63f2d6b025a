package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

func TestExports_ReadsObjectsAndValues(t *testing.T) {
	cm := ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Name: "a", Namespace: "ns"}
	g := mapGetter{cm: obj(t, `{"apiVersion":"v1","kind":"ConfigMap","data":{"url":"http://x"},"spec":{"ports":[{"port":80},{"port":443}]}}`)}
	values := map[string]any{"image": map[string]any{"tag": "1.2"}}
	got, err := Exports(context.Background(), g, values, []Export{
		{Key: "url", Resource: &cm, JSONPath: ".data.url"},
		{Key: "ports", Resource: &cm, JSONPath: "{.spec.ports[*].port}"},
		{Key: "tag", FromValues: ".image.tag"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"ports":[80,443],"tag":"1.2","url":"http://x"}` {
		t.Fatalf("exports = %s", got)
	}
	missing := ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Name: "b", Namespace: "ns"}
	for _, c := range []struct {
		ex   Export
		want string
	}{
		{Export{Key: "x", Resource: &missing, JSONPath: ".data"}, "exports[0] (key x): ConfigMap ns/b does not exist"},
		{Export{Key: "y", Resource: &cm, JSONPath: ".data.nope"}, "exports[0] (key y): ConfigMap ns/a: kube: JSONPath names nothing"},
	} {
		if _, err := Exports(context.Background(), g, nil, []Export{c.ex}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Exports = %v, want %q", err, c.want)
		}
	}
}

func TestUnreachable_TellsNoAnswerFromARefusal(t *testing.T) {
	gr := schema.GroupResource{Resource: "configmaps"}
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{context.DeadlineExceeded, true},
		{apierrors.NewServiceUnavailable("down"), true},
		{apierrors.NewNotFound(gr, "a"), false},
		{apierrors.NewForbidden(gr, "a", errors.New("no")), false},
		{apierrors.NewConflict(gr, "a", errors.New("field")), false},
		{errors.Join(errors.New("discovery"), syscall.ECONNREFUSED), true},
	}
	for _, c := range cases {
		if got := Unreachable(c.err); got != c.want {
			t.Errorf("Unreachable(%v) = %t, want %t", c.err, got, c.want)
		}
	}
}

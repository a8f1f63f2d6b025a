package kinds_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/server/servertest"
)

func cleanerTarget(name, kind, objName string) api.CleanerTarget {
	return api.CleanerTarget{Name: name, Reference: api.TargetReference{Kind: kind, Name: objName}}
}

func TestCleaner_AdmissionRejectsBadSpecsWith422NamingTheField(t *testing.T) {
	s := servertest.Start(t)
	cleaners := client.For[*api.Cleaner](s.Client(t))
	ctx := context.Background()
	inst := cleanerTarget("inst", api.KindInstallation, "preview-1")
	no := false
	for _, tc := range []struct {
		name    string
		spec    api.CleanerSpec
		invalid []string // what the error names; none when valid
	}{
		{name: "valid", spec: api.CleanerSpec{TTL: api.Duration{Duration: time.Hour}, Targets: []api.CleanerTarget{inst},
			Conditions: []string{`inst.metadata.labels["preview"] == "closed"`}}},
		{name: "valid selector", spec: api.CleanerSpec{Targets: []api.CleanerTarget{{Name: "secrets",
			Reference: api.TargetReference{Kind: api.KindSecret, MatchLabels: map[string]string{"preview": "1"}}}},
			Conditions: []string{`secrets.items.size() == 0`}}},
		{name: "syntax error", spec: api.CleanerSpec{Targets: []api.CleanerTarget{inst},
			Conditions: []string{`true`, `inst.metadata.name ==`}},
			invalid: []string{"spec.conditions[1]", "line 1, column 22", "Syntax error"}},
		{name: "unknown variable", spec: api.CleanerSpec{Targets: []api.CleanerTarget{inst},
			Conditions: []string{`preview.metadata.name == "x"`}},
			invalid: []string{"spec.conditions[0]", "line 1, column 1", "undeclared reference to 'preview'"}},
		{name: "variable of a target not evaluated", spec: api.CleanerSpec{Targets: []api.CleanerTarget{{Name: "inst",
			Reference: inst.Reference, IncludeWhenEvaluating: &no}}, Conditions: []string{`inst != null`}},
			invalid: []string{"spec.conditions[0]", "undeclared reference to 'inst'"}},
		{name: "type error", spec: api.CleanerSpec{Conditions: []string{`time > 5`}},
			invalid: []string{"spec.conditions[0]", "line 1, column 6", "no matching overload"}},
		{name: "non-boolean result", spec: api.CleanerSpec{Conditions: []string{`true`, `true`, `"yes"`}},
			invalid: []string{"spec.conditions[2]", "must give a bool, not string"}},
		{name: "target named time", spec: api.CleanerSpec{Targets: []api.CleanerTarget{cleanerTarget("time", api.KindSecret, "s")}},
			invalid: []string{"spec.targets[0].name", "time variable"}},
		{name: "two targets with one name", spec: api.CleanerSpec{Targets: []api.CleanerTarget{inst, inst}},
			invalid: []string{"spec.targets[1].name", "Duplicate"}},
		{name: "target name not an identifier", spec: api.CleanerSpec{Targets: []api.CleanerTarget{cleanerTarget("my-app", api.KindSecret, "s")}},
			invalid: []string{"spec.targets[0].name", "CEL identifier"}},
		{name: "unknown kind", spec: api.CleanerSpec{Targets: []api.CleanerTarget{cleanerTarget("svc", "KnativeService", "s")}},
			invalid: []string{"spec.targets[0].reference.kind", "KnativeService", "Installation"}},
		{name: "cluster-scoped kind", spec: api.CleanerSpec{Targets: []api.CleanerTarget{cleanerTarget("ns", api.KindNamespace, "default")}},
			invalid: []string{"spec.targets[0].reference.kind", "cluster-scoped"}},
		{name: "a cleaner as target", spec: api.CleanerSpec{Targets: []api.CleanerTarget{cleanerTarget("other", api.KindCleaner, "c")}},
			invalid: []string{"spec.targets[0].reference.kind", "cannot target Cleaners"}},
		{name: "neither name nor labels", spec: api.CleanerSpec{Targets: []api.CleanerTarget{{Name: "s",
			Reference: api.TargetReference{Kind: api.KindSecret}}}},
			invalid: []string{"spec.targets[0].reference", "one of name and matchLabels"}},
		{name: "both name and labels", spec: api.CleanerSpec{Targets: []api.CleanerTarget{{Name: "s",
			Reference: api.TargetReference{Kind: api.KindSecret, Name: "a", MatchLabels: map[string]string{"a": "b"}}}}},
			invalid: []string{"spec.targets[0].reference", "exclusive"}},
		{name: "negative ttl", spec: api.CleanerSpec{TTL: api.Duration{Duration: -time.Second}},
			invalid: []string{"spec.ttl"}},
		{name: "period under a second", spec: api.CleanerSpec{Retry: api.CleanerRetry{Period: api.Duration{Duration: time.Millisecond}}},
			invalid: []string{"spec.retry.period"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "-")
			got, err := cleaners.Create(ctx, &api.Cleaner{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"}, Spec: tc.spec})
			if len(tc.invalid) == 0 {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				if got.Spec.Retry.Period.Duration != kinds.DefaultCleanerRetryPeriod || !got.Spec.Targets[0].Evaluated() {
					t.Fatalf("defaults not applied: %+v", got.Spec)
				}
				return
			}
			var st *api.Status
			if !errors.As(err, &st) || st.Code != http.StatusUnprocessableEntity {
				t.Fatalf("create = %v, want a 422", err)
			}
			for _, want := range tc.invalid {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			if _, err := cleaners.Get(ctx, "default", name); !errors.Is(err, api.ErrNotFound) {
				t.Errorf("rejected cleaner was stored: %v", err)
			}
		})
	}
}

package kinds_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/server/servertest"
)

// admitCleaners creates a Cleaner per case and checks that the valid ones
// are stored and the others refused with a 422 naming what invalid lists.
func admitCleaners(t *testing.T, cases []cleanerCase) {
	t.Helper()
	s := servertest.Start(t)
	cleaners := client.For[*api.Cleaner](s.Client(t))
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ToLower(strings.ReplaceAll(tc.name, " ", "-"))
			_, err := cleaners.Create(ctx, &api.Cleaner{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"}, Spec: tc.spec})
			if len(tc.invalid) == 0 {
				if err != nil {
					t.Fatalf("create: %v", err)
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
		})
	}
}

type cleanerCase struct {
	name    string
	spec    api.CleanerSpec
	invalid []string // what the error names; none when valid
}

func capacity(max int, kind string, labels map[string]string) *api.CleanerCapacity {
	return &api.CleanerCapacity{Max: max, Selector: api.CapacitySelector{Kind: kind, MatchLabels: labels}}
}

func TestCleaner_AdmissionChecksDryRunAndCapacity(t *testing.T) {
	previews := map[string]string{"app": "preview"}
	admitCleaners(t, []cleanerCase{
		{name: "dry run", spec: api.CleanerSpec{DryRun: true}},
		{name: "capacity", spec: api.CleanerSpec{Capacity: capacity(10, api.KindInstallation, previews)}},
		{name: "capacity ordered by creation", spec: api.CleanerSpec{Capacity: &api.CleanerCapacity{Max: 1,
			Selector: api.CapacitySelector{Kind: api.KindSecret}, OrderBy: api.CapacityOrderByCreation}}},
		{name: "capacity of zero", spec: api.CleanerSpec{Capacity: capacity(0, api.KindInstallation, previews)},
			invalid: []string{"spec.capacity.max", "must be between 1 and"}},
		{name: "capacity of an unknown kind", spec: api.CleanerSpec{Capacity: capacity(1, "Preview", previews)},
			invalid: []string{"spec.capacity.selector.kind", "Preview", "Installation"}},
		{name: "capacity without kind", spec: api.CleanerSpec{Capacity: capacity(1, "", previews)},
			invalid: []string{"spec.capacity.selector.kind", "Required"}},
		{name: "capacity of namespaces", spec: api.CleanerSpec{Capacity: capacity(1, api.KindNamespace, nil)},
			invalid: []string{"spec.capacity.selector.kind", "cluster-scoped"}},
		{name: "capacity of cleaners", spec: api.CleanerSpec{Capacity: capacity(1, api.KindCleaner, nil)},
			invalid: []string{"spec.capacity.selector.kind", "cannot target Cleaners"}},
		{name: "capacity with a bad label", spec: api.CleanerSpec{Capacity: capacity(1, api.KindSecret, map[string]string{"a b": "c"})},
			invalid: []string{"spec.capacity.selector.matchLabels[a b]"}},
		{name: "capacity in another order", spec: api.CleanerSpec{Capacity: &api.CleanerCapacity{Max: 1,
			Selector: api.CapacitySelector{Kind: api.KindSecret}, OrderBy: "name"}},
			invalid: []string{"spec.capacity.orderBy", `"name"`, "creationTimestamp"}},
	})
}

func TestCleaner_AdmissionTypeChecksConditionsAgainstTheTargetsSchemas(t *testing.T) {
	pr := api.CleanerTarget{Name: "pr", Reference: api.TargetReference{Kind: api.KindInstallation, Name: "preview-1"}}
	sel := api.CleanerTarget{Name: "secrets", Reference: api.TargetReference{Kind: api.KindSecret, MatchLabels: map[string]string{"a": "b"}}}
	ev := api.CleanerTarget{Name: "ev", Reference: api.TargetReference{Kind: api.KindEvent, Name: "e"}}
	cond := func(ts []api.CleanerTarget, c ...string) api.CleanerSpec {
		return api.CleanerSpec{Targets: ts, Conditions: c}
	}
	one := []api.CleanerTarget{pr}
	admitCleaners(t, []cleanerCase{
		{name: "typed fields", spec: cond(one, `pr.metadata.name.startsWith("preview-") && pr.metadata.generation + 1 > 1`,
			`pr.status.phase == "Succeeded" && has(pr.metadata.labels) && pr.metadata.labels["x"] == "y"`)},
		{name: "lastChangeTime is a timestamp", spec: cond(one, `time - pr.lastChangeTime > duration("72h")`)},
		{name: "creationTimestamp is a string to convert", spec: cond(one, `time - timestamp(pr.metadata.creationTimestamp) > duration("1h")`)},
		{name: "selected items", spec: cond([]api.CleanerTarget{sel}, `secrets.items.all(s, size(s.data) > 0 && time - s.lastChangeTime > duration("1h"))`)},
		{name: "free-form payload stays dyn", spec: cond([]api.CleanerTarget{ev}, `ev.spec.payload != "" && ev.spec.labels["pr"] == "1"`)},
		{name: "string plus int", spec: cond(one, `pr.metadata.name + 1 == 2`),
			invalid: []string{"spec.conditions[0]", "_+_", "(string, int)", "schema"}},
		{name: "unknown field", spec: cond(one, `pr.spec.nope == "x"`),
			invalid: []string{"spec.conditions[0]", "undefined field 'nope'"}},
		{name: "lastChangeTime compared to a string", spec: cond(one, `pr.lastChangeTime > "2026-01-01"`),
			invalid: []string{"spec.conditions[0]", "_>_", "(timestamp, string)"}},
		{name: "items of a selection", spec: cond([]api.CleanerTarget{sel}, `secrets.items.size() > "1"`),
			invalid: []string{"spec.conditions[0]", "_>_", "(int, string)"}},
	})
}

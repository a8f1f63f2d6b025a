package kinds_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

func TestExecution_AdmissionRejectsBadDeployItemsNamingTheField(t *testing.T) {
	s := servertest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	if _, err := c.Create(ctx, testkit.Object(api.KindNamespace, "", "x")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		items string
		want  []string // what the 422 names; none: accepted
	}{
		{"valid", `[{"name":"a","type":"mock"},{"name":"b","type":"mock","dependsOn":["a"],"timeout":"90s"}]`, nil},
		{"duplicate name", `[{"name":"a","type":"mock"},{"name":"a","type":"mock"}]`, []string{"spec.deployItems[1].name", "Duplicate"}},
		{"name not DNS-1123", `[{"name":"A_b","type":"mock"}]`, []string{"spec.deployItems[0].name", "RFC 1123"}},
		{"empty type", `[{"name":"a","type":""}]`, []string{"spec.deployItems[0].type", "Required"}},
		{"unknown dependency", `[{"name":"a","type":"mock","dependsOn":["zz"]}]`, []string{"spec.deployItems[0].dependsOn[0]", "zz"}},
		{"self dependency", `[{"name":"a","type":"mock","dependsOn":["a"]}]`, []string{"spec.deployItems[0].dependsOn[0]", "itself"}},
		{"cycle", `[{"name":"a","type":"mock","dependsOn":["b"]},{"name":"b","type":"mock","dependsOn":["c"]},{"name":"c","type":"mock","dependsOn":["a"]}]`,
			[]string{"spec.deployItems", "a → b → c → a", "cycle"}},
		{"timeout not a duration", `[{"name":"a","type":"mock","timeout":"soon"}]`, []string{"spec.deployItems[0].timeout", "soon"}},
		{"timeout a number", `[{"name":"a","type":"mock","timeout":90}]`, []string{"spec.deployItems[0].timeout"}},
		{"timeout negative", `[{"name":"a","type":"mock","timeout":"-5s"}]`, []string{"spec.deployItems[0].timeout", "positive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := testkit.Object(api.KindExecution, "x", strings.ReplaceAll(tc.name, " ", "-"),
				testkit.Field("spec", `{"deployItems":`+tc.items+`}`))
			_, err := c.Create(ctx, obj)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				return
			}
			if !errors.Is(err, api.ErrInvalid) {
				t.Fatalf("create = %v, want 422 Invalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestDeployItemAndTarget_AdmissionRequiresATypeAndAValidTimeout(t *testing.T) {
	s := servertest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	if _, err := c.Create(ctx, testkit.Object(api.KindNamespace, "", "x")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, kind, spec, want string
	}{
		{"item ok", api.KindDeployItem, `{"type":"mock","timeout":"1m"}`, ""},
		{"item without type", api.KindDeployItem, `{"type":" "}`, "spec.type"},
		{"item bad timeout", api.KindDeployItem, `{"type":"mock","timeout":"1 minute"}`, "spec.timeout"},
		{"target ok", api.KindTarget, `{"type":"local"}`, ""},
		{"target without type", api.KindTarget, `{"config":{}}`, "spec.type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Create(ctx, testkit.Object(tc.kind, "x", strings.ReplaceAll(tc.name, " ", "-"), testkit.Field("spec", tc.spec)))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				return
			}
			if !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("create = %v, want 422 naming %s", err, tc.want)
			}
		})
	}
}

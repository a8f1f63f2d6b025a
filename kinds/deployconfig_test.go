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

func TestManifestConfig_AdmissionRejectsABadEntryNamingItsIndex(t *testing.T) {
	s := servertest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	if _, err := c.Create(ctx, testkit.Object(api.KindNamespace, "", "x")); err != nil {
		t.Fatal(err)
	}
	cm := `{"manifest":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}}`
	for _, tc := range []struct {
		name, kind, spec, want string
	}{
		{"item ok", api.KindDeployItem, `{"type":"manifest","config":{"manifests":[` + cm + `]}}`, ""},
		{"item entry not an object", api.KindDeployItem, `{"type":"manifest","config":{"manifests":[` + cm + `,{"manifest":"kind: ConfigMap"}]}}`,
			"spec.config: Invalid value: \"\": config.manifests[1].manifest is not an object"},
		{"item entry without kind", api.KindDeployItem, `{"type":"manifest","config":{"manifests":[{"manifest":{"apiVersion":"v1","metadata":{"name":"a"}}}]}}`,
			"config.manifests[0].manifest.kind is required"},
		{"item entry without name", api.KindDeployItem, `{"type":"manifest","config":{"manifests":[{"manifest":{"apiVersion":"v1","kind":"ConfigMap"}}]}}`,
			"config.manifests[0].manifest.metadata.name is required"},
		{"item bad policy", api.KindDeployItem, `{"type":"manifest","config":{"manifests":[{"policy":"forever","manifest":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}}]}}`,
			`config.manifests[0].policy "forever" is not one of manage, keep, ignore`},
		{"execution entry without apiVersion", api.KindExecution, `{"deployItems":[{"name":"m","type":"manifest","config":{"manifests":[{"manifest":{"kind":"ConfigMap","metadata":{"name":"a"}}}]}}]}`,
			"spec.deployItems[0].config: Invalid value: \"\": config.manifests[0].manifest.apiVersion is required"},
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

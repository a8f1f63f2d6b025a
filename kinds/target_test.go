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

func TestTarget_AdmissionChecksTheConfigOfAKubernetesCluster(t *testing.T) {
	s := servertest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"ok", `{"type":"kubernetes-cluster","config":{"kubeconfig":{"secretRef":{"name":"prod","key":"config"}}}}`, ""},
		{"key defaults", `{"type":"kubernetes-cluster","config":{"kubeconfig":{"secretRef":{"name":"prod"}}}}`, ""},
		{"other types unchanged", `{"type":"local","config":{"anything":1}}`, ""},
		{"no config", `{"type":"kubernetes-cluster"}`, "spec.config"},
		{"no secret name", `{"type":"kubernetes-cluster","config":{"kubeconfig":{"secretRef":{"key":"k"}}}}`, "spec.config.kubeconfig.secretRef.name"},
		{"bad secret name", `{"type":"kubernetes-cluster","config":{"kubeconfig":{"secretRef":{"name":"Prod_1"}}}}`, "spec.config.kubeconfig.secretRef.name"},
		{"bad key", `{"type":"kubernetes-cluster","config":{"kubeconfig":{"secretRef":{"name":"prod","key":"a/b"}}}}`, "spec.config.kubeconfig.secretRef.key"},
		{"unknown field", `{"type":"kubernetes-cluster","config":{"kubeconfig":{"secretRef":{"name":"prod"}},"server":"x"}}`, `unknown field "server"`},
		{"config not an object", `{"type":"kubernetes-cluster","config":"prod"}`, "spec.config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Create(ctx, testkit.Object(api.KindTarget, "default", strings.ReplaceAll(tc.name, " ", "-"), testkit.Field("spec", tc.spec)))
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

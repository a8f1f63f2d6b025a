package kinds_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/column"
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

func TestTarget_GetShowsTypeReachabilityAndVersion(t *testing.T) {
	s := servertest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	obj, err := c.Create(ctx, testkit.Object(api.KindTarget, "default", "prod",
		testkit.Spec(`{"type":"kubernetes-cluster","config":{"kubeconfig":{"secretRef":{"name":"prod"}}}}`)))
	if err != nil {
		t.Fatal(err)
	}
	obj.SetField(api.FieldStatus, []byte(`{"observedGeneration":1,"serverVersion":"v1.37.2",
		"conditions":[{"type":"Reachable","status":"True","reason":"Connected","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`))
	if _, err := c.UpdateStatus(ctx, obj); err != nil {
		t.Fatalf("write the status: %v", err)
	}
	kinds, err := c.Kinds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var cols []api.Column
	for _, k := range kinds {
		if k.Kind == api.KindTarget {
			cols = k.Columns
		}
	}
	got, err := c.Get(ctx, api.KindTarget, "default", "prod")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(got)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var cells []string
	for _, col := range cols {
		cells = append(cells, col.Name+"="+column.Cell(m, col, nil, time.Now()))
	}
	if want := "TYPE=kubernetes-cluster REACHABLE=True VERSION=v1.37.2"; !strings.HasPrefix(strings.Join(cells, " "), want) || len(cells) != 4 {
		t.Errorf("columns %v, want %s and AGE", cells, want)
	}
}

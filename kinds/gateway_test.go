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

func TestGateway_AdmissionNamesTheFieldAtFault(t *testing.T) {
	s := servertest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"github", `{"type":"github","secretRef":{"name":"hook","key":"secret"}}`, ""},
		{"cloudevents", `{"type":"cloudevents","secretRef":{"name":"hook","key":"token"}}`, ""},
		{"github reporting", `{"type":"github","secretRef":{"name":"hook","key":"secret"},"report":{"tokenSecretRef":{"name":"gh","key":"token"}}}`, ""},
		{"no type", `{"secretRef":{"name":"hook","key":"secret"}}`, "spec.type"},
		{"unknown type", `{"type":"gitlab","secretRef":{"name":"hook","key":"secret"}}`, "spec.type"},
		{"no secret name", `{"type":"github","secretRef":{"key":"secret"}}`, "spec.secretRef.name"},
		{"no secret key", `{"type":"github","secretRef":{"name":"hook"}}`, "spec.secretRef.key"},
		{"bad secret name", `{"type":"github","secretRef":{"name":"Hook_1","key":"secret"}}`, "spec.secretRef.name"},
		{"cloudevents reporting", `{"type":"cloudevents","secretRef":{"name":"hook","key":"t"},"report":{"tokenSecretRef":{"name":"gh","key":"t"}}}`, "spec.report"},
		{"report without token", `{"type":"github","secretRef":{"name":"hook","key":"s"},"report":{}}`, "spec.report.tokenSecretRef.name"},
		{"bad api url", `{"type":"github","secretRef":{"name":"hook","key":"s"},"report":{"tokenSecretRef":{"name":"gh","key":"t"},"apiURL":"api.github.com"}}`,
			"spec.report.apiURL"},
		{"unknown field", `{"type":"github","secretRef":{"name":"hook","key":"s"},"secret":"x"}`, "secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Create(ctx, testkit.Object(api.KindGateway, "default", strings.ReplaceAll(tc.name, " ", "-"), testkit.Field("spec", tc.spec)))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				return
			}
			if !errors.Is(err, api.ErrInvalid) && !errors.Is(err, api.ErrBadRequest) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("create = %v, want 422 naming %s", err, tc.want)
			}
		})
	}
}

func TestGateway_ReportDefaultsToGitHubAndGetShowsItsColumns(t *testing.T) {
	s := servertest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	obj, err := c.Create(ctx, testkit.Object(api.KindGateway, "default", "github",
		testkit.Spec(`{"type":"github","secretRef":{"name":"hook","key":"secret"},"report":{"tokenSecretRef":{"name":"gh","key":"token"}}}`)))
	if err != nil {
		t.Fatal(err)
	}
	var gw api.Gateway
	if err := obj.Into(&gw); err != nil {
		t.Fatal(err)
	}
	if gw.Spec.Report.APIURL != api.DefaultGitHubAPIURL {
		t.Errorf("report.apiURL %q, want the default %s", gw.Spec.Report.APIURL, api.DefaultGitHubAPIURL)
	}
	kinds, err := c.Kinds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var cols []api.Column
	for _, k := range kinds {
		if k.Kind == api.KindGateway {
			cols = k.Columns
		}
	}
	raw, _ := json.Marshal(obj)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var cells []string
	for _, col := range cols {
		cells = append(cells, col.Name+"="+column.Cell(m, col, nil, time.Now()))
	}
	if want := "TYPE=github SECRET=hook REPORT-API=https://api.github.com AGE="; !strings.HasPrefix(strings.Join(cells, " "), want) {
		t.Errorf("columns %v, want %s...", cells, want)
	}
}

package server_test

import (
	"net/http"
	"strings"
	"testing"

	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

func TestMetrics_RequestsLatenciesAndOpenWatches(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	c.do("POST", nsPath("default", "secrets"), testkit.Secret("default", "a", nil)).expect(t, http.StatusCreated)
	c.do("GET", nsPath("default", "secrets", "missing"), nil).expect(t, http.StatusNotFound)
	w := openWatch(t, s, nsPath("default", "secrets")+"?watch=true")
	w.expectChanges(t, "ADDED a")

	body := string(c.do("GET", "/metrics", nil).expect(t, http.StatusOK).body)
	for _, want := range []string{
		`cairn_http_requests_total{code="201",resource="secrets",verb="create"} 1`,
		`cairn_http_requests_total{code="404",resource="secrets",verb="get"} 1`,
		`cairn_http_request_duration_seconds_count{resource="secrets",verb="create"} 1`,
		`cairn_watches{resource="secrets"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// The collectors are on the registry handed to the server, not a global one.
	mfs, err := s.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		found = found || mf.GetName() == "cairn_watches"
	}
	if !found {
		t.Fatal("cairn_watches is not on Options.Metrics")
	}
}

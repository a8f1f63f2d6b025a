package get_test

import (
	"fmt"
	"strings"
	"testing"

	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/server/servertest"
)

// listRequests counts the server's answered list requests on secrets.
func listRequests(t *testing.T, srv *servertest.Server) float64 {
	t.Helper()
	mfs, err := srv.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "cairn_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["verb"] == "list" && labels["resource"] == "secrets" {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

func TestGet_ChunkSizePagesTheList(t *testing.T) {
	srv := servertest.Start(t)
	var manifest []string
	for i := range 5 {
		manifest = append(manifest, fmt.Sprintf("apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: s%d}\n", i))
	}
	if r := clitest.RunContext(t.Context(), t, srv.Config(), clitest.Cmd{
		Args: []string{"apply", "-f", "-"}, Stdin: strings.Join(manifest, "---\n")}, nil); r.Error != nil {
		t.Fatalf("apply: %v %s", r.Error, r.Err)
	}
	tests := []struct {
		chunk    string
		requests float64 // list requests one get makes
	}{
		{"2", 3},   // 2 + 2 + 1
		{"500", 1}, // the default
		{"0", 1},   // the client's own pages of 500
	}
	for _, tc := range tests {
		t.Run("chunk size "+tc.chunk, func(t *testing.T) {
			before := listRequests(t, srv)
			r := clitest.Run(t, srv.Config(), "get", "secrets", "--chunk-size", tc.chunk, "-o", "name")
			if r.Error != nil {
				t.Fatal(r.Error)
			}
			for i := range 5 {
				if !strings.Contains(r.Out, fmt.Sprintf("s%d\n", i)) {
					t.Fatalf("get --chunk-size %s printed\n%s\nwant s0 to s4", tc.chunk, r.Out)
				}
			}
			if got := listRequests(t, srv) - before; got != tc.requests {
				t.Fatalf("get --chunk-size %s made %v list requests, want %v", tc.chunk, got, tc.requests)
			}
		})
	}
	if r := clitest.Run(t, srv.Config(), "get", "secrets", "--chunk-size", "-1"); r.Error == nil {
		t.Fatal("a negative --chunk-size was accepted")
	}
}

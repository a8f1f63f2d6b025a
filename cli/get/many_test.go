package get_test

import (
	"strings"
	"testing"

	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/server/servertest"
)

// The tables and errors of several kinds are in TestGet_Outputs and
// TestGet_Errors; this test covers their documents and the empty case.
func TestGet_SeveralKindsAsDocumentsAndWhenEmpty(t *testing.T) {
	srv := servertest.Start(t)
	seed(t, srv)
	r := clitest.Run(t, srv.Config(), "get", "secrets,ns", "-o", "yaml")
	if r.Error != nil || strings.Count(r.Out, "kind: List\n") != 2 || !strings.Contains(r.Out, "\n---\n") {
		t.Errorf("YAML of two kinds: two List documents with a separator, got %v\n%s", r.Error, r.Out)
	}
	if strings.Contains(r.Out, "aHVudGVyMg==") {
		t.Error("a listing of several kinds shows a secret value")
	}
	r = clitest.Run(t, srv.Config(), "get", "cleaners,executions")
	if r.Error != nil || r.Out != "" || r.Err != "No resources found.\n" {
		t.Errorf("nothing of either kind: out %q err %q %v", r.Out, r.Err, r.Error)
	}
}

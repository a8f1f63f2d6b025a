package openapi_test

import (
	"bytes"
	"os"
	"testing"

	"cairn.dev/cairn/openapi/internal/docgen"
)

// TestDocs_GeneratedFromTheCurrentDocComments fails when the doc comments
// of package api changed since zz_generated.docs.go was written: run
// `go generate ./openapi/`.
func TestDocs_GeneratedFromTheCurrentDocComments(t *testing.T) {
	d, err := docgen.Extract("../api")
	if err != nil {
		t.Fatal(err)
	}
	want, err := docgen.Render(d, "openapi", "apiDocs", "gendocs from the doc comments of package api")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("zz_generated.docs.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("zz_generated.docs.go is out of date: run go generate ./openapi/")
	}
	if d.Types["Installation"] == "" || d.Fields["InstallationStatus.ImportGenerations"] == "" || len(d.Enums["DeployPhase"]) != 5 {
		t.Errorf("docs of package api missing: %q, %q, %v", d.Types["Installation"], d.Fields["InstallationStatus.ImportGenerations"], d.Enums["DeployPhase"])
	}
}

// Command gendocs writes the documentation of cairn's wire types (package
// api) as a Go file of package openapi. It is run by `go generate` in the
// openapi directory:
//
//	gendocs -src ../api -out zz_generated.docs.go
package main

import (
	"flag"
	"fmt"
	"os"

	"cairn.dev/cairn/openapi/internal/docgen"
)

func main() {
	src := flag.String("src", "../api", "directory of the package whose docs are read")
	out := flag.String("out", "zz_generated.docs.go", "file to write")
	flag.Parse()
	if err := run(*src, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func run(src, out string) error {
	d, err := docgen.Extract(src)
	if err != nil {
		return err
	}
	b, err := docgen.Render(d, "openapi", "apiDocs", "gendocs from the doc comments of package api")
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

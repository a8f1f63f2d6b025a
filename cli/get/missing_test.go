package get_test

import (
	"testing"

	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/server/servertest"
)

func TestGet_MissingObjectPrintsOnlyTheError(t *testing.T) {
	srv := servertest.Start(t)
	for _, format := range []string{"yaml", "json", "name", "wide"} {
		r := clitest.Run(t, srv.Config(), "get", "secret", "nothere", "-o", format)
		if r.Error == nil || r.Out != "" {
			t.Errorf("-o %s of a missing secret: out %q, err %v; want only an error", format, r.Out, r.Error)
		}
	}
}

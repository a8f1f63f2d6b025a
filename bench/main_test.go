package bench

import (
	"os"
	"testing"

	"cairn.dev/cairn/internal/gopace"
)

// TestMain paces the garbage collector as `cairn server` does (package
// gopace: GOGC=300 and a soft memory limit, unless GOGC or GOMEMLIMIT are
// set), so that the figures are a server's. GOGC=100 measures Go's
// default pace instead.
func TestMain(m *testing.M) {
	gopace.Set()
	os.Exit(m.Run())
}

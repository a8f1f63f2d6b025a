package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"cairn.dev/cairn/console"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/browsertest"
)

// decision is one check of testdata/decisions/decisions.js.
type decision struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	Got  string `json:"got"`
	Want string `json:"want"`
}

// TestConsole_PureDecisionsInTheBrowser runs the checks of the console's
// pure decisions (phases and their order, filter parsing, countdowns, the
// Deployments tree, routes, the reconnect and resume of live lists, the
// Overview's counts from watch events, redaction) in chromium, against
// the modules the console serves, and reports each that fails.
func TestConsole_PureDecisionsInTheBrowser(t *testing.T) {
	f := setup(t) // the shared browser
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, console.Handler())
	mux.Handle("/test/", http.StripPrefix("/test/", http.FileServer(http.Dir("testdata/decisions"))))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	tab := browsertest.Tab(t, f.browser)
	run(t, tab, chromedp.Navigate(srv.URL+"/test/index.html"))
	var got []decision
	testkit.EventuallyNil(t, 20*time.Second, "the checks to run", func() error {
		raw, err := eval[string](tab, `window.decisions ? JSON.stringify(window.decisions) : ''`)
		if err != nil || raw == "" {
			state, _ := text(tab, "#state")
			return fmt.Errorf("not done (%v; the page says %q)", err, state)
		}
		return json.Unmarshal([]byte(raw), &got)
	})
	if len(got) < 90 {
		t.Errorf("only %d checks ran; a module failed to load?", len(got))
	}
	for _, d := range got {
		if !d.OK {
			t.Errorf("%s: got %s, want %s", d.Name, d.Got, d.Want)
		}
	}
}

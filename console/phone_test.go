package console_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"cairn.dev/cairn/cli/clitest"
)

// phoneCheck is what the page reports of its layout at phone width.
type phoneCheck struct {
	ScrollWidth int      `json:"scrollWidth"`
	Width       int      `json:"width"`
	Unreachable []string `json:"unreachable"` // navigation out of sight
	RowDisplay  string   `json:"rowDisplay"`  // of the first table body row ("" without a table)
	CellLabel   string   `json:"cellLabel"`   // the label shown before its first cell
}

const phoneCheckJS = `(() => {
  const w = document.documentElement.clientWidth;
  const unreachable = [...document.querySelectorAll('header.top a, #signout')].filter(e => {
    const r = e.getBoundingClientRect();
    return r.width === 0 || r.left < 0 || r.right > w + 0.5;
  }).map(e => e.textContent);
  const tr = document.querySelector('#main table tbody tr');
  const td = tr && tr.querySelector('td');
  return JSON.stringify({ scrollWidth: document.documentElement.scrollWidth, width: w, unreachable,
    rowDisplay: tr ? getComputedStyle(tr).display : '',
    cellLabel: td ? getComputedStyle(td, '::before').content : '' });
})()`

// TestConsole_PhoneWidthHasNoSidewaysScrollAndTablesBecomeRows opens every
// view at 390×844: the page never scrolls sideways, every navigation link
// and "Sign out" are on screen, and a table's rows are blocks whose cells
// say which column they are.
func TestConsole_PhoneWidthHasNoSidewaysScrollAndTablesBecomeRows(t *testing.T) {
	f := setup(t)
	ns := f.namespace(t, "phone")
	f.apply(t, fmt.Sprintf(shopYAML, ns, "1s"))
	f.apply(t, `
apiVersion: cairn.dev/v1alpha1
kind: Cleaner
metadata: {name: tidy-previews-of-the-long-named-project, namespace: `+ns+`}
spec:
  ttl: 1h
  targets: [{name: shop, reference: {kind: Installation, name: shop}, delete: true}]
  conditions: ["shop.metadata.name == 'shop' && time > timestamp('2026-01-01T00:00:00Z')"]
---
apiVersion: cairn.dev/v1alpha1
kind: Project
metadata: {name: hello, namespace: `+ns+`}
spec:
  workerTemplate:
    command: [sh, -c, 'echo hi']
`)
	if r := clitest.Run(t, f.d.ClientConfig(), "event", "create", "-n", ns, "--project", "hello", "--source", "test", "--type", "run"); r.Error != nil {
		t.Fatalf("event create: %v %s", r.Error, r.Err)
	}
	tab := f.tab(t)
	run(t, tab, chromedp.EmulateViewport(390, 844))
	for _, v := range []struct {
		name, path, sel, shows, label string
	}{
		{"overview", "/ui/?ns=" + ns, "table.overview", "installations", "namespace"},
		{"deployments", "/ui/deployments?ns=" + ns, "#tree", "shop-app", ""},
		{"events", "/ui/events?ns=" + ns, "#events", "hello", "event"},
		{"cleaners", "/ui/cleaners?ns=" + ns, "table.cleaners", "tidy", "cleaner"},
		{"list", "/ui/list/installations?ns=" + ns, ".vlist", "shop-app", ""},
		{"object", "/ui/namespaces/" + ns + "/installations/shop", "#yaml", "name: shop", ""},
	} {
		open(t, tab, v.path)
		waitText(t, tab, v.sel, v.shows)
		raw, err := eval[string](tab, phoneCheckJS)
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		var c phoneCheck
		if err := json.Unmarshal([]byte(raw), &c); err != nil {
			t.Fatalf("%s: %s: %v", v.name, raw, err)
		}
		if c.ScrollWidth > c.Width {
			t.Errorf("%s: the page scrolls sideways: %dpx wide in a %dpx screen", v.name, c.ScrollWidth, c.Width)
		}
		if len(c.Unreachable) > 0 {
			t.Errorf("%s: navigation out of sight: %q", v.name, c.Unreachable)
		}
		if v.label != "" && (c.RowDisplay != "block" || c.CellLabel != fmt.Sprintf("%q", v.label)) {
			t.Errorf("%s: a table row shows as %q with the label %s, want a block labelled %q", v.name, c.RowDisplay, c.CellLabel, v.label)
		}
		// The screen as a phone shows it (a full-page capture lays the
		// page out again at another width).
		png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("%s: screenshot: %v", v.name, err)
		}
		if err := os.WriteFile(filepath.Join(f.shots, "phone-"+v.name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

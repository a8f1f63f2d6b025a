package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/browsertest"
)

// The console's benchmarks, driven through a real headless chromium
// against a server holding 10,000 installations in one namespace (no
// controllers: the objects only sit there).

const consoleObjects = 10_000

// consoleServer starts a pure API server with consoleObjects
// installations in namespace "big" and a browser tab signed in to it.
func consoleServer(b *testing.B) (*daemon.Daemon, context.Context) {
	b.Helper()
	d, _ := clitest.StartDaemon(b, daemon.Options{InsecureHTTP: true, NamespaceMaxObjects: -1, NamespaceMaxBytes: -1,
		DataDir: filepath.Join(b.TempDir(), "data"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx := identity.With(testkit.Context(b), identity.System())
	reg := d.Registry()
	if _, err := reg.Create(ctx, testkit.Object(api.KindNamespace, "", "big")); err != nil {
		b.Fatal(err)
	}
	blueprint := json.RawMessage(`{"blueprint":{"inline":{"deployExecutions":[{"name":"items","template":"deployItems: []"}]}}}`)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < consoleObjects; i += 8 {
				o := testkit.Object(api.KindInstallation, "big", fmt.Sprintf("inst-%05d", i))
				o.SetField("spec", blueprint)
				if _, err := reg.Create(ctx, o); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	tab := browsertest.Tab(b, browsertest.Start(b))
	if err := chromedp.Do(tab, chromedp.Navigate(d.URL()+"/ui/"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), d.Token()), chromedp.Click(chromedp.CSS("#signin button[type=submit]")),
		chromedp.WaitVisible(chromedp.ID("signout")), chromedp.Navigate(d.URL()+"/ui/cleaners")); err != nil {
		b.Fatal(err)
	}
	return d, tab
}

// BenchmarkConsole_FirstScreenOf10000Installations loads the list page of
// 10,000 installations (a full page load: the console's modules, the
// first page of the list from the server, the first rows drawn) and stops
// the clock when the first row is on screen. The issue asks for under 1 s.
func BenchmarkConsole_FirstScreenOf10000Installations(b *testing.B) {
	d, tab := consoleServer(b)
	url := d.URL() + "/ui/list/installations?ns=big"
	// One load untimed: the browser's first start of a page is not the
	// console's.
	if err := chromedp.Do(tab, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(".vrow")), chromedp.Navigate(d.URL()+"/ui/cleaners")); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		ctx, cancel := context.WithTimeout(tab, 30*time.Second)
		if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(".vrow"))); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/first-screen")
}

// BenchmarkConsole_ChangeArrivesOn10000InstallationList writes a phase
// change to one of the 10,000 installations while its list is open, and
// stops the clock when the changed row (failing objects come first) shows
// the new phase. The issue asks for under 1 s.
func BenchmarkConsole_ChangeArrivesOn10000InstallationList(b *testing.B) {
	d, tab := consoleServer(b)
	c := d.Client()
	if err := chromedp.Do(tab, chromedp.Navigate(d.URL()+"/ui/list/installations?ns=big"), chromedp.WaitVisible(chromedp.CSS(".vrow"))); err != nil {
		b.Fatal(err)
	}
	// Every page read, so that the list is whole before the clock runs.
	if err := chromedp.Do(tab, chromedp.WaitVisible(chromedp.CSS(`#liststatus [data-state="live"]`))); err != nil {
		b.Fatal(err)
	}
	ctx := testkit.Context(b)
	i := 0
	for b.Loop() {
		i++
		name := fmt.Sprintf("inst-%05d", (i*7919)%consoleObjects)
		patch := []byte(`{"status":{"phase":"Failed","lastError":{"reason":"Bench","message":"change ` + fmt.Sprint(i) + `"}}}`)
		if _, err := c.Patch(ctx, api.KindInstallation, "big", name, patch, true); err != nil {
			b.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(tab, 30*time.Second)
		sel := fmt.Sprintf(`a.vrow[href$="/%s"] .badge.failed`, name)
		if err := chromedp.Do(wctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/change")
}

// BenchmarkConsole_OverviewOf10000Installations loads the Overview of the
// namespace of 10,000 installations and stops the clock when its row
// counts them all. It reports the bytes of the API answers the page read
// to get there (the watches it keeps open are not finished answers).
func BenchmarkConsole_OverviewOf10000Installations(b *testing.B) {
	d, tab := consoleServer(b)
	url := d.URL() + "/ui/?ns=big"
	done := fmt.Sprintf(`[...document.querySelectorAll('table.overview tbody tr')].some(r => r.textContent.includes('installations') && r.textContent.includes('%d'))`, consoleObjects)
	load := func(ctx context.Context) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
			return err
		}
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](done, chromedp.WithPollingInterval(10*time.Millisecond)))
		return err
	}
	// One load untimed, as for the list.
	if err := load(tab); err != nil {
		b.Fatal(err)
	}
	var bytes float64
	for b.Loop() {
		ctx, cancel := context.WithTimeout(tab, 60*time.Second)
		if err := load(ctx); err != nil {
			b.Fatal(err)
		}
		n, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.getEntriesByType('resource').filter(e => e.name.includes('/apis/')).reduce((s, e) => s + e.encodedBodySize, 0)`))
		if err != nil {
			b.Fatal(err)
		}
		bytes += n
		cancel()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/overview")
	b.ReportMetric(bytes/float64(b.N), "apibytes/overview")
}

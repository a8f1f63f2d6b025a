// Package browsertest drives a real browser from Go tests: Debian's
// chromium, headless, through the DevTools protocol (chromedp). It is for
// tests only. A machine without chromium fails the test, naming the
// script that installs it (.ci/run): browser tests are never skipped.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// Path returns the chromium binary: $CAIRN_CHROMIUM, /usr/bin/chromium,
// or chromium on $PATH. It fails the test when there is none.
func Path(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("CAIRN_CHROMIUM"), "/usr/bin/chromium"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Fatal("browsertest: chromium is missing: .ci/run installs it (apt-get install -y chromium), or set CAIRN_CHROMIUM")
	return ""
}

// Start starts a headless chromium with a fresh profile under t.TempDir()
// at 1280×800 and returns the context of its first tab. The browser ends
// when the test's cleanup runs.
func Start(t testing.TB) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Path(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("browsertest: start chromium: %v", err)
	}
	return ctx
}

// Tab opens a new tab of the browser of ctx; it closes at cleanup.
func Tab(t testing.TB, browser context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("browsertest: open a tab: %v", err)
	}
	return ctx
}

// ScreenshotDir is where screenshots go: $CAIRN_SCREENSHOTS when set
// (created if needed), otherwise a directory of the test's.
func ScreenshotDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("CAIRN_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// Screenshot writes a PNG of the whole page of tab ctx to dir/name.png.
func Screenshot(t testing.TB, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("browsertest: screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Errorf("browsertest: write screenshot: %v", err)
	}
}

package console_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/browsertest"
)

// A cairn server with every controller, on plain HTTP on loopback, and
// one headless chromium, shared by the browser tests (each test has its
// own namespace and tab).
type fixture struct {
	d       *daemon.Daemon
	c       client.Interface
	url     string
	browser context.Context
	shots   string
}

var (
	shared     *fixture
	sharedOnce sync.Once
	sharedStop []func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	for i := len(sharedStop) - 1; i >= 0; i-- {
		sharedStop[i]()
	}
	os.Exit(code)
}

// sharedT runs the cleanups of the shared fixture at TestMain's end.
type sharedT struct{ testing.TB }

func (s sharedT) Cleanup(f func()) { sharedStop = append(sharedStop, f) }
func (s sharedT) TempDir() string {
	d, err := os.MkdirTemp("", "cairn-console-")
	if err != nil {
		s.TB.Fatal(err)
	}
	sharedStop = append(sharedStop, func() { os.RemoveAll(d) })
	// Units of the runtime run as users of their own: they pass through.
	if err := os.Chmod(d, 0o711); err != nil {
		s.TB.Fatal(err)
	}
	return d
}

func setup(t *testing.T) *fixture {
	t.Helper()
	browsertest.Path(t) // fail first, naming .ci/run, without chromium
	sharedOnce.Do(func() {
		st := sharedT{t}
		d, c := clitest.StartDaemon(st, daemon.Options{InsecureHTTP: true, Controllers: controllers.List(controllers.Config{}), LeaderTTL: time.Second})
		shared = &fixture{d: d, c: c, url: d.URL(), browser: browsertest.Start(st), shots: browsertest.ScreenshotDir(st)}
	})
	if shared == nil {
		t.Fatal("the shared server and browser did not start")
	}
	return shared
}

// apply applies YAML with `cairn apply -f -`.
func (f *fixture) apply(t *testing.T, yaml string) {
	t.Helper()
	r := clitest.RunContext(t.Context(), t, f.d.ClientConfig(), clitest.Cmd{Args: []string{"apply", "-f", "-"}, Stdin: yaml}, nil)
	if r.Error != nil {
		t.Fatalf("apply: %v %s", r.Error, r.Err)
	}
}

// namespace creates a namespace named for the test.
func (f *fixture) namespace(t *testing.T, name string) string {
	t.Helper()
	f.apply(t, "apiVersion: cairn.dev/v1alpha1\nkind: Namespace\nmetadata: {name: "+name+"}\n")
	return name
}

// tab opens a tab signed in with the admin token.
func (f *fixture) tab(t *testing.T) context.Context {
	t.Helper()
	tab := browsertest.Tab(t, f.browser)
	f.signIn(t, tab, f.d.Token())
	testkit.EventuallyNil(t, 20*time.Second, "the console to show its navigation", func() error {
		return f.present(tab, "#signout")
	})
	return tab
}

func (f *fixture) signIn(t *testing.T, tab context.Context, token string) {
	t.Helper()
	run(t, tab, chromedp.Navigate(f.url+"/ui/"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token), chromedp.Click(chromedp.CSS("#signin button[type=submit]")))
}

func run(t *testing.T, tab context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JS expression in the tab (bounded by 5s).
func eval[T any](tab context.Context, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(tab, 5*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

func (f *fixture) present(tab context.Context, sel string) error {
	ok, err := eval[bool](tab, fmt.Sprintf("!!document.querySelector(%q)", sel))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no %s on the page", sel)
	}
	return nil
}

// text returns the text of the first element sel matches ("" if none).
func text(tab context.Context, sel string) (string, error) {
	return eval[string](tab, fmt.Sprintf("(document.querySelector(%q) || {}).textContent || ''", sel))
}

// waitText waits until the element sel matches contains every want.
func waitText(t *testing.T, tab context.Context, sel string, want ...string) string {
	t.Helper()
	var got string
	testkit.EventuallyNil(t, 45*time.Second, fmt.Sprintf("%s to show %q", sel, want), func() error {
		var err error
		if got, err = text(tab, sel); err != nil {
			return err
		}
		for _, w := range want {
			if !strings.Contains(got, w) {
				return fmt.Errorf("it shows %q", got)
			}
		}
		return nil
	})
	return got
}

// open navigates the signed-in tab to a console path through the page's
// own router (no reload), as a click on a link does.
func open(t *testing.T, tab context.Context, path string) {
	t.Helper()
	run(t, tab, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const a = document.createElement('a'); a.href = %q; document.body.append(a); a.click(); a.remove(); })()`, path)))
}

func (f *fixture) shot(t *testing.T, tab context.Context, name string) {
	browsertest.Screenshot(t, tab, f.shots, name)
}

const shopYAML = `
apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: shop, namespace: %[1]s, labels: {app: shop}}
spec:
  blueprint:
    inline:
      subinstallations:
      - name: database
        blueprint:
          inline:
            exports: [{name: connection}]
            deployExecutions:
            - name: items
              template: "deployItems: [{name: db, type: mock, config: {delay: %[2]s, export: {port: 5432}}}]"
            exportExecutions:
            - name: out
              template: "exports: {connection: {{ .deployItems.db.exports | toJson }}}"
        exports: {data: [{name: connection, dataRef: db}]}
      - name: app
        blueprint:
          inline:
            imports: [{name: db}]
            deployExecutions:
            - name: items
              template: "deployItems: [{name: web, type: mock, config: {phase: Failed}}]"
        imports: {data: [{name: db, dataRef: db}]}
`

// phaseOf reads status.phase.
func phaseOf(o *api.Object) string {
	p, _ := o.Lookup(".status.phase").(string)
	return p
}

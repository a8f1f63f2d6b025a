package console_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/browsertest"
)

// TestConsole_SignInKeepsTheTokenInSessionStorageOnlyAndSignOutForgetsIt
// signs in with the admin token: it is in sessionStorage, never in the
// URL, localStorage or a cookie; signing out forgets it.
func TestConsole_SignInKeepsTheTokenInSessionStorageOnlyAndSignOutForgetsIt(t *testing.T) {
	f := setup(t)
	tab := f.tab(t)
	tok := f.d.Token()
	got, err := eval[string](tab, "sessionStorage.getItem('cairn.token') || ''")
	if err != nil || got != tok {
		t.Fatalf("sessionStorage holds %q (err %v), want the token", got, err)
	}
	where, _ := eval[string](tab, "location.href + '|' + document.cookie + '|' + JSON.stringify(localStorage) + '|' + document.documentElement.outerHTML")
	if strings.Contains(where, tok) {
		t.Fatal("the token is in the URL, a cookie, localStorage or the DOM")
	}
	f.shot(t, tab, "overview")
	run(t, tab, chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("token")))
	if got, _ := eval[string](tab, "sessionStorage.getItem('cairn.token') || ''"); got != "" {
		t.Fatal("signing out left the token in sessionStorage")
	}
}

// TestConsole_RefusedTokenShowsWhy signs in with a token the server does
// not know: the sign-in page says the server refused it.
func TestConsole_RefusedTokenShowsWhy(t *testing.T) {
	f := setup(t)
	tab := browsertest.Tab(t, f.browser)
	f.signIn(t, tab, "not-a-token-the-server-knows")
	waitText(t, tab, "#signin-error", "The server refused this token")
	if got, _ := eval[string](tab, "sessionStorage.getItem('cairn.token') || ''"); got != "" {
		t.Fatal("a refused token was kept")
	}
	f.shot(t, tab, "signin-refused")
}

// TestConsole_DeploymentsTreeShowsItemsAndAPhaseChangeArrivesWithoutReload
// opens the Deployments view before the database's deploy item finishes:
// the tree shows installation → subinstallations → execution → deploy
// items with the failing item's error, and the database's Succeeded
// arrives on the same page (no reload: a marker set on window survives).
func TestConsole_DeploymentsTreeShowsItemsAndAPhaseChangeArrivesWithoutReload(t *testing.T) {
	f := setup(t)
	ns := f.namespace(t, "tree")
	tab := f.tab(t)
	open(t, tab, "/ui/deployments?ns="+ns)
	run(t, tab, chromedp.Evaluate[chromedp.Void]("window.__sameDocument = true"))
	f.apply(t, fmt.Sprintf(shopYAML, ns, "4s"))
	waitText(t, tab, "#tree", "shop-database", "Progressing")
	waitText(t, tab, "#tree", "shop-app", "web", "Failed", "imports db from db")
	got := waitText(t, tab, "#tree", "DeployItem", "Succeeded")
	if !strings.Contains(got, "Execution") {
		t.Errorf("the tree has no execution: %s", got)
	}
	if same, _ := eval[bool](tab, "window.__sameDocument === true"); !same {
		t.Fatal("the page was reloaded")
	}
	f.shot(t, tab, "deployments")
}

// TestConsole_ReconcileButtonAnnotatesTheInstallation clicks "reconcile":
// the server sees the operation annotation on the installation.
func TestConsole_ReconcileButtonAnnotatesTheInstallation(t *testing.T) {
	f := setup(t)
	ns := f.namespace(t, "reconcile")
	f.apply(t, "apiVersion: cairn.dev/v1alpha1\nkind: Installation\nmetadata: {name: solo, namespace: "+ns+"}\nspec:\n  blueprint:\n    inline:\n      deployExecutions:\n      - name: items\n        template: \"deployItems: [{name: x, type: mock, config: {}}]\"\n")
	ctx := testkit.Context(t)
	w, err := f.c.Watch(ctx, "Installation", ns, api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	tab := f.tab(t)
	open(t, tab, "/ui/deployments?ns="+ns)
	waitText(t, tab, "#tree", "solo")
	run(t, tab, chromedp.Click(chromedp.CSS(`button[aria-label="reconcile solo"]`)))
	waitText(t, tab, "#notice", "reconcile of solo: requested")
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("the watch ended: %v", w.Err())
			}
			if ev.Object.Annotations["cairn.dev/operation"] == "reconcile" {
				return
			}
		case <-deadline:
			t.Fatal("the server never saw cairn.dev/operation: reconcile")
		}
	}
}

// TestConsole_EventLogFollowsWhileRunningAndCancelAbortsIt opens a running
// event's page: its worker's log grows on the page as the worker writes;
// "Cancel event…" asks for confirmation, and the event is then ABORTED.
func TestConsole_EventLogFollowsWhileRunningAndCancelAbortsIt(t *testing.T) {
	f := setup(t)
	ns := f.namespace(t, "events")
	f.apply(t, "apiVersion: cairn.dev/v1alpha1\nkind: Project\nmetadata: {name: hello, namespace: "+ns+"}\nspec:\n  workerTemplate:\n    command: [sh, -c, 'echo started; sleep 1; echo tick-one; sleep 1; echo tick-two; sleep 120']\n")
	if r := clitest.Run(t, f.d.ClientConfig(), "event", "create", "-n", ns, "--project", "hello", "--source", "test", "--type", "run"); r.Error != nil {
		t.Fatalf("event create: %v %s", r.Error, r.Err)
	}
	l, err := f.c.List(testkit.Context(t), "Event", ns, api.ListOptions{})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("events: %v %v", l, err)
	}
	name := l.Items[0].Name
	tab := f.tab(t)
	open(t, tab, "/ui/events?ns="+ns)
	waitText(t, tab, "#events", "hello", name)
	open(t, tab, "/ui/namespaces/"+ns+"/events/"+name)
	waitText(t, tab, `pre.log[data-unit="worker"]`, "started")
	waitText(t, tab, `pre.log[data-unit="worker"]`, "tick-two") // written after the page opened the stream
	f.shot(t, tab, "event")
	run(t, tab, chromedp.Click(chromedp.ID("cancel-event")), chromedp.WaitVisible(chromedp.ID("confirm")),
		chromedp.Click(chromedp.ID("confirm-yes")))
	waitText(t, tab, ".eventpanel", "ABORTED")
	testkit.EventuallyNil(t, 30*time.Second, "the event to be aborted", func() error {
		ev, err := f.c.Get(testkit.Context(t), "Event", ns, name)
		if err != nil {
			return err
		}
		if p, _ := ev.Lookup(".status.worker.phase").(string); p != "ABORTED" {
			return fmt.Errorf("worker phase %q", p)
		}
		return nil
	})
}

// TestConsole_StableURLOpensTheObjectWithItsTraceOwnersAndDependents
// pastes an installation's URL into a fresh tab that signs in: it lands
// on the object's page with its YAML, its trace, its owner and its
// dependents.
func TestConsole_StableURLOpensTheObjectWithItsTraceOwnersAndDependents(t *testing.T) {
	f := setup(t)
	ns := f.namespace(t, "stable")
	f.apply(t, fmt.Sprintf(shopYAML, ns, "0s"))
	testkit.EventuallyNil(t, 60*time.Second, "shop-app to fail", func() error {
		o, err := f.c.Get(testkit.Context(t), "Installation", ns, "shop-app")
		if err != nil {
			return err
		}
		if phaseOf(o) != "Failed" {
			return fmt.Errorf("phase %q", phaseOf(o))
		}
		return nil
	})
	tab := browsertest.Tab(t, f.browser)
	run(t, tab, chromedp.Navigate(f.url+"/ui/namespaces/"+ns+"/installations/shop-app"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), f.d.Token()), chromedp.Click(chromedp.CSS("#signin button[type=submit]")))
	waitText(t, tab, "h1", "shop-app", "Failed")
	if p, _ := eval[string](tab, "location.pathname"); p != "/ui/namespaces/"+ns+"/installations/shop-app" {
		t.Fatalf("landed on %s", p)
	}
	waitText(t, tab, "#yaml", "kind: Installation", "name: shop-app")
	waitText(t, tab, "#main", "Installation shop", "Execution shop-app", "DeployItem") // owner up, dependents down
	waitText(t, tab, ".timeline", "installation")
	f.shot(t, tab, "object")
}

// TestConsole_SecretValueIsNowhereInThePage opens a Secret's page and
// the list of Secrets: neither the value nor its base64 is in the DOM.
func TestConsole_SecretValueIsNowhereInThePage(t *testing.T) {
	f := setup(t)
	ns := f.namespace(t, "secrets")
	const value = "console-s3cr3t-value"
	f.apply(t, "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: db-password, namespace: "+ns+"}\nstringData: {password: "+value+"}\n")
	tab := f.tab(t)
	open(t, tab, "/ui/namespaces/"+ns+"/secrets/db-password")
	waitText(t, tab, "#yaml", "db-password", "never")
	html, _ := eval[string](tab, "document.documentElement.outerHTML")
	open(t, tab, "/ui/list/secrets?ns="+ns)
	waitText(t, tab, ".vlist", "db-password")
	list, _ := eval[string](tab, "document.documentElement.outerHTML")
	for _, leak := range []string{value, "Y29uc29sZS1zM2NyM3QtdmFsdWU"} {
		if strings.Contains(html+list, leak) {
			t.Fatalf("the page holds the secret (%q)", leak)
		}
	}
}

// TestConsole_ObjectDeletedWhileViewedSaysItIsGone deletes the object a
// page shows: the page says so.
func TestConsole_ObjectDeletedWhileViewedSaysItIsGone(t *testing.T) {
	f := setup(t)
	ns := f.namespace(t, "gone")
	f.apply(t, "apiVersion: cairn.dev/v1alpha1\nkind: DataObject\nmetadata: {name: config, namespace: "+ns+"}\ndata: {a: 1}\n")
	tab := f.tab(t)
	open(t, tab, "/ui/namespaces/"+ns+"/dataobjects/config")
	waitText(t, tab, "#yaml", "name: config")
	if r := clitest.Run(t, f.d.ClientConfig(), "delete", "dataobject", "config", "-n", ns); r.Error != nil {
		t.Fatalf("delete: %v %s", r.Error, r.Err)
	}
	waitText(t, tab, "#gone", "This object is gone")
}

// TestConsole_OverviewCleanersAndListsOpenAndTheKeyboardMovesThroughRows
// opens the Overview, the Cleaners view and a list: each shows the
// namespace's objects; in the list, ↓ focuses the first row, ↓ again the
// second, and Enter opens that object's page.
func TestConsole_OverviewCleanersAndListsOpenAndTheKeyboardMovesThroughRows(t *testing.T) {
	f := setup(t)
	ns := f.namespace(t, "views")
	f.apply(t, `
apiVersion: cairn.dev/v1alpha1
kind: DataObject
metadata: {name: alpha, namespace: `+ns+`}
data: {a: 1}
---
apiVersion: cairn.dev/v1alpha1
kind: DataObject
metadata: {name: beta, namespace: `+ns+`}
data: {b: 2}
---
apiVersion: cairn.dev/v1alpha1
kind: Cleaner
metadata: {name: tidy, namespace: `+ns+`}
spec:
  ttl: 1h
  targets: [{name: alpha, reference: {kind: DataObject, name: alpha}, delete: true}]
  conditions: ["alpha != null"]
`)
	tab := f.tab(t)
	open(t, tab, "/ui/?ns="+ns)
	waitText(t, tab, "table.overview", ns, "cleaners")
	open(t, tab, "/ui/cleaners?ns="+ns)
	waitText(t, tab, "table.cleaners", "tidy", "left", "alpha: DataObject alpha (deleted)")
	f.shot(t, tab, "cleaners")
	open(t, tab, "/ui/list/dataobjects?ns="+ns)
	waitText(t, tab, ".vlist", "alpha", "beta")
	run(t, tab, chromedp.Focus(chromedp.CSS(".vlist")), chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowDown))
	if got, _ := eval[string](tab, "document.activeElement.textContent"); !strings.Contains(got, "beta") {
		t.Fatalf("after ↓↓ the focus is on %q, want beta's row", got)
	}
	run(t, tab, chromedp.KeyEvent(kb.Enter))
	testkit.EventuallyNil(t, 10*time.Second, "Enter to open beta's page", func() error {
		p, err := eval[string](tab, "location.pathname")
		if err != nil || p != "/ui/namespaces/"+ns+"/dataobjects/beta" {
			return fmt.Errorf("at %q (%v)", p, err)
		}
		return nil
	})
	waitText(t, tab, "#yaml", "name: beta")
}

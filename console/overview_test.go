package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
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

// overviewKinds are the plurals the Overview counts.
var overviewKinds = []string{"installations", "executions", "deployitems", "events", "cleaners"}

// TestConsole_OverviewCountsThousandsWithoutListingThemAndStaysRight
// opens the Overview of a namespace of 2,000 installations (1,500
// Succeeded, 400 Progressing, 100 Failed with a lastError) on a server
// of its own: the counts are right, the server answered counts and not
// one list of a counted kind, and the counts follow a change of an
// installation the page has not seen (Succeeded → Failed, which needs a
// recount), a second change of it (Failed → Progressing, moved from the
// watch alone) and a new installation.
func TestConsole_OverviewCountsThousandsWithoutListingThemAndStaysRight(t *testing.T) {
	f := setup(t) // the shared browser
	d, _ := clitest.StartDaemon(t, daemon.Options{InsecureHTTP: true, NamespaceMaxObjects: -1, NamespaceMaxBytes: -1,
		DataDir: filepath.Join(t.TempDir(), "data"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	// Longer than testkit.Context's: 4,000 writes take a while under -race.
	long, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	ctx := identity.With(long, identity.System())
	reg := d.Registry()
	const ns = "many"
	if _, err := reg.Create(ctx, testkit.Object(api.KindNamespace, "", ns)); err != nil {
		t.Fatal(err)
	}
	phase := func(i int) string {
		switch {
		case i < 100:
			return `{"phase":"Failed","lastError":{"reason":"DeployFailed","message":"boom"}}`
		case i < 500:
			return `{"phase":"Progressing"}`
		}
		return `{"phase":"Succeeded"}`
	}
	spec := json.RawMessage(`{"blueprint":{"inline":{"deployExecutions":[{"name":"items","template":"deployItems: []"}]}}}`)
	// setPhase writes statuses (no resourceVersion: a write that timed
	// out on this busy machine is written again, to the same effect).
	setPhase := func(objs []*api.Object) {
		t.Helper()
		testkit.EventuallyNil(t, time.Minute, "the statuses to be written", func() error {
			for _, r := range reg.UpdateStatuses(ctx, objs) {
				if r.Err != nil {
					return r.Err
				}
			}
			return nil
		})
	}
	mk := func(name, status string) *api.Object {
		o := testkit.Object(api.KindInstallation, ns, name, testkit.Status(status))
		o.SetField("spec", spec)
		return o
	}
	create := func(o *api.Object) {
		t.Helper()
		testkit.EventuallyNil(t, time.Minute, "the create of "+o.Name, func() error {
			if _, err := reg.Create(ctx, o.DeepCopy()); err != nil && !errors.Is(err, api.ErrAlreadyExists) {
				return err
			}
			return nil
		})
	}
	var batch []*api.Object
	for i := range 2000 {
		o := mk(fmt.Sprintf("inst-%04d", i), phase(i))
		create(o)
		if batch = append(batch, o); len(batch) == 200 {
			setPhase(batch)
			batch = nil
		}
	}
	requests := func(verb string) (n float64) {
		for _, pl := range overviewKinds {
			v, _ := testkit.MetricSum(t, d.Metrics(), "cairn_http_requests_total", "verb", verb, "resource", pl)
			n += v
		}
		return n
	}

	tab := browsertest.Tab(t, f.browser)
	run(t, tab, chromedp.Navigate(d.URL()+"/ui/?ns="+ns), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), d.Token()), chromedp.Click(chromedp.CSS("#signin button[type=submit]")))
	row := "table.overview tbody tr:first-child"
	waitText(t, tab, row, ns, "installations", "2000", "100 failing", "Succeeded 1500", "Progressing 400", "Failed 100")
	f.shot(t, tab, "overview-2000")

	// inst-1999 has not changed since the page counted: a recount.
	one := mk("inst-1999", `{"phase":"Failed","lastError":{"reason":"DeployFailed","message":"late"}}`)
	setPhase([]*api.Object{one})
	waitText(t, tab, row, "2000", "101 failing", "Succeeded 1499", "Failed 101")
	// Seen now: its next change moves one count to another.
	setPhase([]*api.Object{mk("inst-1999", `{"phase":"Progressing"}`)})
	waitText(t, tab, row, "2000", "100 failing", "Progressing 401", "Failed 100")
	create(mk("inst-new", `{}`))
	waitText(t, tab, row, "2001", "no phase 1", "Succeeded 1499")

	if n := requests("list"); n != 0 {
		t.Errorf("the Overview listed a counted kind %v times: it must count, not list", n)
	}
	if n := requests("count"); n < float64(len(overviewKinds)) {
		t.Errorf("the server answered %v counts, want at least one per kind (%d)", n, len(overviewKinds))
	}
}

package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
)

// TestConsole_DependentsPanelAsksTheServerAndShowsBlockersAndDetached
// opens the page of a DataObject that owns a DataObject (owning another),
// a Gateway, a protected DataObject and one that keeps another owner. The
// panel shows the tree the server's GET .../dependents answers, with the
// Gateway (a kind no list scan in the page reads), the protected object
// as a blocker and the one with another owner as detached; the server
// counted the page's request for it.
func TestConsole_DependentsPanelAsksTheServerAndShowsBlockersAndDetached(t *testing.T) {
	f := setup(t)
	ns := f.namespace(t, "dependents")
	ctx := testkit.Context(t)
	mk := func(kind, name string, opts ...testkit.Opt) *api.Object {
		t.Helper()
		o, err := f.c.Create(ctx, testkit.Object(kind, ns, name, opts...))
		if err != nil {
			t.Fatalf("create %s %s: %v", kind, name, err)
		}
		return o
	}
	root, keeper := mk(api.KindDataObject, "root"), mk(api.KindDataObject, "keeper")
	a := mk(api.KindDataObject, "child-a", testkit.OwnedBy(root))
	mk(api.KindDataObject, "grandchild-c", testkit.OwnedBy(a))
	mk(api.KindGateway, "hook", testkit.OwnedBy(root), testkit.Spec(`{"type":"cloudevents","secretRef":{"name":"hook-token","key":"token"}}`))
	mk(api.KindDataObject, "guarded-p", testkit.OwnedBy(root), testkit.Annotations(api.AnnotationDeletionProtection, "true"))
	mk(api.KindDataObject, "shared-s", testkit.OwnedBy(root, keeper))

	asked := func() float64 {
		n, _ := testkit.MetricSum(t, f.d.Metrics(), "cairn_http_requests_total", "verb", "get", "resource", "dataobjects/dependents", "code", "200")
		return n
	}
	// The graph must hold the whole tree before the page asks once.
	hc := testkit.HTTPClient(t, f.d.ClientConfig())
	path := f.url + api.BasePath + "/namespaces/" + ns + "/dataobjects/root/dependents"
	testkit.EventuallyNil(t, 30*time.Second, "the graph to hold the tree", func() error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer "+f.d.Token())
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var d api.Dependents
		if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || d.Total != 4 || len(d.Detached) != 1 {
			return fmt.Errorf("%s: total %d, detached %v (%v)", resp.Status, d.Total, d.Detached, err)
		}
		return nil
	})
	before := asked()
	tab := f.tab(t)
	open(t, tab, "/ui/namespaces/"+ns+"/dataobjects/root")
	waitText(t, tab, "#main", "DataObject child-a", "DataObject grandchild-c", "Gateway hook", "guarded-p", "deletion-protected", "would take 4")
	waitText(t, tab, "#blockers", "DataObject guarded-p")
	waitText(t, tab, "#detached", "DataObject shared-s")
	if tree, _ := text(tab, "ul.dependents"); strings.Contains(tree, "shared-s") {
		t.Errorf("the tree shows shared-s, which keeps another owner: %q", tree)
	}
	if href, _ := eval[string](tab, `document.querySelector('#dependents a[href$="/gateways/hook"]')?.getAttribute('href') || ''`); href != "/ui/namespaces/"+ns+"/gateways/hook" {
		t.Errorf("the Gateway links to %q", href)
	}
	if after := asked(); after <= before {
		t.Errorf("the server answered no GET dataobjects/dependents (%v before, %v after)", before, after)
	}
	f.shot(t, tab, "dependents")

	// Deleted, root is held by the protected object its cascade meets.
	if _, _, err := f.c.Delete(ctx, api.KindDataObject, ns, "root", api.DeleteOptions{}); err != nil {
		t.Fatalf("delete root: %v", err)
	}
	waitText(t, tab, "#holds", "what holds it", "the protected DataObject guarded-p blocks the cascade")
}

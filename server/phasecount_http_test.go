package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/server/servertest"
)

// TestPhaseCount_ListAsksForCountsByNamespaceAndPhase: a list asked for
// with Accept PhaseCount answers how many widgets are in each phase by
// namespace (label selector applied), which are being deleted, and the
// list's resourceVersion, with no object in it; a watch from that version
// sees the next change. It is counted as verb "count" in the metrics.
func TestPhaseCount_ListAsksForCountsByNamespaceAndPhase(t *testing.T) {
	// testkit's Widget: a status of any shape.
	s := servertest.Start(t, servertest.WithKinds(append(kinds.All(kinds.Deps{}), testkit.WidgetKind())...))
	c := newClient(t, s)
	c.do("POST", path("namespaces"), testkit.Object(api.KindNamespace, "", "other")).expect(t, http.StatusCreated)
	for _, w := range []struct{ ns, name, status string }{
		{"default", "a1", `{"phase":"Failed","lastError":{"message":"boom"}}`},
		{"default", "a2", `{"phase":"Failed"}`},
		{"default", "a3", `{"phase":"Succeeded"}`},
		{"other", "b1", `{"phase":"Succeeded"}`},
		{"other", "b2", ``},
	} {
		c.do("POST", nsPath(w.ns, "widgets"), testkit.Widget(w.ns, w.name, testkit.Labels("app", "web"),
			testkit.Finalizers("example.com/hold"))).expect(t, http.StatusCreated)
		if w.status != "" {
			c.do("PATCH", nsPath(w.ns, "widgets", w.name, "status"), `{"status":`+w.status+`}`,
				"Content-Type", "application/merge-patch+json").expect(t, http.StatusOK)
		}
	}
	c.do("POST", nsPath("default", "widgets"), testkit.Widget("default", "unlabeled")).expect(t, http.StatusCreated)
	c.do("DELETE", nsPath("other", "widgets", "b1"), nil).expect(t, http.StatusAccepted)

	r := c.do("GET", path("widgets")+"?labelSelector=app%3Dweb", nil, "Accept", api.PhaseCountMediaType).expect(t, http.StatusOK)
	if ct := r.header.Get("Content-Type"); ct != api.PhaseCountMediaType {
		t.Errorf("Content-Type %q, want %q", ct, api.PhaseCountMediaType)
	}
	if strings.Contains(string(r.body), `"items"`) || strings.Contains(string(r.body), `"a1"`) {
		t.Errorf("the count carries objects: %s", r.body)
	}
	var got api.PhaseCount
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	want := []api.PhaseGroup{
		{Namespace: "default", Phase: "Failed", Count: 2, LastError: 1},
		{Namespace: "default", Phase: "Succeeded", Count: 1},
		{Namespace: "other", Phase: "", Count: 1},
		{Namespace: "other", Phase: "Succeeded", Count: 1},
	}
	if got.Kind != api.KindPhaseCount || got.Counted != testkit.KindWidget || !equalGroups(got.Groups, want) {
		t.Errorf("count %s %s: groups %+v, want %+v", got.Kind, got.Counted, got.Groups, want)
	}
	if len(got.Deleting) != 1 || got.Deleting[0].Name != "b1" || got.Deleting[0].Phase != "Succeeded" || got.Deleting[0].DeletionTimestamp.IsZero() {
		t.Errorf("deleting %+v, want b1 (Succeeded) with its deletion time", got.Deleting)
	}
	if got.Metadata.ResourceVersion == "" {
		t.Fatal("the count has no resourceVersion")
	}

	// In one namespace, by a scoped route.
	r = c.do("GET", nsPath("other", "widgets"), nil, "Accept", api.PhaseCountMediaType).expect(t, http.StatusOK)
	var one api.PhaseCount
	if err := json.Unmarshal(r.body, &one); err != nil || len(one.Groups) != 2 || one.Groups[0].Namespace != "other" {
		t.Errorf("count in namespace other: %s (%v)", r.body, err)
	}

	// A watch from the count's version sees the change after it.
	ctx := identity.With(testkit.Context(t), identity.System())
	w, err := s.Registry.Watch(ctx, testkit.KindWidget, "", api.ListOptions{ResourceVersion: got.Metadata.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	c.do("PATCH", nsPath("default", "widgets", "a3", "status"), `{"status":{"phase":"Failed"}}`,
		"Content-Type", "application/merge-patch+json").expect(t, http.StatusOK)
	ev := <-w.Events()
	if ev.Type != api.Modified || ev.Object.Name != "a3" {
		t.Errorf("the watch from the count's version saw %s %s first, want MODIFIED a3", ev.Type, ev.Object.Name)
	}

	if n, _ := testkit.MetricSum(t, s.Metrics, "cairn_http_requests_total", "verb", "count", "resource", "widgets", "code", "200"); n != 2 {
		t.Errorf("the metrics count %v count requests, want 2", n)
	}
}

func equalGroups(a, b []api.PhaseGroup) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPhaseCount_RefusesWhatItCannotAnswerAndIsAuthorizedAsAList: a watch,
// a limit or a continue token with Accept PhaseCount is a 400 naming the
// parameter; a token that may not list the kind gets 403 as for a list.
func TestPhaseCount_RefusesWhatItCannotAnswerAndIsAuthorizedAsAList(t *testing.T) {
	s := startWithWidgets(t, newWidgetHooks(), servertest.WithAuthorize(ownWidget))
	c := newClient(t, s)
	for _, q := range []struct{ query, field string }{
		{"?watch=true", "watch"},
		{"?limit=10", "limit"},
		{"?continue=abc", "continue"},
	} {
		st := c.do("GET", nsPath("default", "widgets")+q.query, nil, "Accept", api.PhaseCountMediaType).expect(t, http.StatusBadRequest).status(t)
		if !strings.HasPrefix(st.Message, q.field+":") || st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != q.field {
			t.Errorf("%s: %q (%+v), want a message and cause naming %s", q.query, st.Message, st.Details, q.field)
		}
	}
	worker := c.as(s.NewToken(t, identity.User{Name: "event:default/w1", Scope: "default/w1"}))
	st := worker.do("GET", nsPath("default", "widgets"), nil, "Accept", api.PhaseCountMediaType).expect(t, http.StatusForbidden).status(t)
	if !strings.Contains(st.Message, "may not list widgets") {
		t.Errorf("forbidden count says %q, want it to name the list", st.Message)
	}
}

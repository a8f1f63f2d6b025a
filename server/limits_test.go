package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/server/servertest"
)

func TestHTTP_NamespaceLimitsAnswer403NamingTheLimitAndShowUsageOnGet(t *testing.T) {
	c := newClient(t, servertest.Start(t))
	c.do("POST", path("namespaces"), `{"apiVersion":"cairn.dev/v1alpha1","kind":"Namespace","metadata":{"name":"team-a"},"spec":{"limits":{"objects":5,"bytes":"64Ki"}}}`).
		expect(t, http.StatusCreated)
	secret := func(name string) string {
		return fmt.Sprintf(`{"apiVersion":"cairn.dev/v1alpha1","kind":"Secret","metadata":{"name":%q},"stringData":{"k":"v"}}`, name)
	}
	for i := range 5 {
		c.do("POST", nsPath("team-a", "secrets"), secret(fmt.Sprintf("s%d", i))).expect(t, http.StatusCreated)
	}
	st := c.do("POST", nsPath("team-a", "secrets"), secret("s5")).expect(t, http.StatusForbidden).status(t)
	want := `namespace "team-a" has reached its limit of 5 objects (spec.limits.objects): it holds 5 and this write adds 1`
	if st.Reason != api.ReasonForbidden || st.Message != want || st.Details == nil ||
		st.Details.Kind != api.KindNamespace || st.Details.Name != "team-a" || st.Details.Causes[0].Field != "spec.limits.objects" {
		t.Fatalf("status %+v %+v, want Forbidden: %s", st, st.Details, want)
	}
	c.do("DELETE", nsPath("team-a", "secrets", "s0")+"?force=true", nil).expect(t, http.StatusOK)
	c.do("POST", nsPath("team-a", "secrets"), secret("s5")).expect(t, http.StatusCreated)

	var ns api.Namespace
	if err := json.Unmarshal(c.do("GET", path("namespaces", "team-a"), nil).expect(t, http.StatusOK).body, &ns); err != nil {
		t.Fatal(err)
	}
	u := ns.Status.Usage
	if u == nil || u.Objects != 5 || u.Bytes <= 0 || *u.Limits.Objects != 5 || u.Limits.Bytes.String() != "64Ki" {
		t.Fatalf("status.usage %+v, want 5 objects of 5 within 64Ki", u)
	}
	// A list shows the Namespace as stored: no usage.
	if body := c.do("GET", path("namespaces"), nil).expect(t, http.StatusOK).body; strings.Contains(string(body), `"usage"`) {
		t.Fatalf("a list shows usage: %s", body)
	}
}

func TestHTTP_InvalidNamespaceLimitsAre422NamingTheField(t *testing.T) {
	c := newClient(t, servertest.Start(t))
	cases := []struct{ limits, field string }{
		{`{"objects":-3}`, "spec.limits.objects"},
		{`{"bytes":"a lot"}`, "spec.limits.bytes"},
	}
	for i, tc := range cases {
		body := fmt.Sprintf(`{"apiVersion":"cairn.dev/v1alpha1","kind":"Namespace","metadata":{"name":"n%d"},"spec":{"limits":%s}}`, i, tc.limits)
		st := c.do("POST", path("namespaces"), body).expect(t, http.StatusUnprocessableEntity).status(t)
		if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != tc.field {
			t.Errorf("%s: %+v, want a cause naming %s", tc.limits, st.Details, tc.field)
		}
	}
}

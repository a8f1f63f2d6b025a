package server_test

import (
	"net/http"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

// TestFence_HeaderMakesAWriteConditionalOnTheLeaseTerm: a write with a
// Cairn-Fence header commits only while the Lease is in that term; a stale
// term is a 409 NotLeader naming the holder; a malformed header a 400;
// reads ignore it.
func TestFence_HeaderMakesAWriteConditionalOnTheLeaseTerm(t *testing.T) {
	s := servertest.Start(t)
	admin := newClient(t, s)
	l := admin.do("POST", path("leases"), map[string]any{"apiVersion": api.APIVersion, "kind": api.KindLease,
		"metadata": map[string]any{"name": "controllers"},
		"spec":     map[string]any{"holderIdentity": "http://a", "leaseDurationSeconds": 5, "leaseTransitions": 2}}).
		expect(t, http.StatusCreated).object(t)
	held := api.Fence{Lease: "controllers", UID: l.UID, Holder: "http://a", Term: 2}
	stale := held
	stale.Term = 1

	admin.do("POST", nsPath("default", "secrets"), testkit.Secret("default", "in-term", nil),
		api.HeaderFence, held.Header()).expect(t, http.StatusCreated)
	st := admin.do("POST", nsPath("default", "secrets"), testkit.Secret("default", "stale", nil),
		api.HeaderFence, stale.Header()).expect(t, http.StatusConflict).status(t)
	if !api.IsNotLeader(st) || !strings.Contains(st.Message, "held by http://a") {
		t.Fatalf("stale term: %s %q %+v, want a NotLeader Conflict naming the holder", st.Reason, st.Message, st.Details)
	}
	admin.do("GET", nsPath("default", "secrets", "stale"), nil).expect(t, http.StatusNotFound)
	st = admin.do("POST", nsPath("default", "secrets"), testkit.Secret("default", "bad", nil),
		api.HeaderFence, "lease=controllers").expect(t, http.StatusBadRequest).status(t)
	if !strings.Contains(st.Message, api.HeaderFence) {
		t.Fatalf("malformed header: %q, want it named", st.Message)
	}
	admin.do("GET", nsPath("default", "secrets", "in-term"), nil, api.HeaderFence, stale.Header()).expect(t, http.StatusOK)
}

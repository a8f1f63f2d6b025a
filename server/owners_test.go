package server_test

import (
	"net/http"
	"testing"

	"cairn.dev/cairn/server/servertest"
)

// TestOwners_ReferencesAsControllerRuntimeWritesThem: an owner reference
// with controller and blockOwnerDeletion (what controller-runtime's
// SetControllerReference writes) is accepted and kept.
func TestOwners_ReferencesAsControllerRuntimeWritesThem(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	owner := c.do("POST", nsPath("default", "dataobjects"), `{"apiVersion":"cairn.dev/v1alpha1","kind":"DataObject","metadata":{"name":"o"}}`).
		expect(t, http.StatusCreated).object(t)
	body := `{"apiVersion":"cairn.dev/v1alpha1","kind":"DataObject","metadata":{"name":"d","ownerReferences":[` +
		`{"apiVersion":"cairn.dev/v1alpha1","kind":"DataObject","name":"o","uid":"` + owner.UID + `","controller":true,"blockOwnerDeletion":true}]}}`
	d := c.do("POST", nsPath("default", "dataobjects"), body).expect(t, http.StatusCreated).object(t)
	if refs := d.OwnerReferences; len(refs) != 1 || !refs[0].Controller || !refs[0].BlockOwnerDeletion || refs[0].UID != owner.UID {
		t.Fatalf("owner references %+v", refs)
	}
	got := c.do("GET", nsPath("default", "dataobjects", "d"), nil).expect(t, http.StatusOK).object(t)
	if refs := got.OwnerReferences; len(refs) != 1 || !refs[0].BlockOwnerDeletion {
		t.Fatalf("stored owner references %+v", refs)
	}
}

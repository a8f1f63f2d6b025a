package server_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/server/servertest"
)

const applyType = "application/apply-patch+yaml"

func managers(o *api.Object) []string {
	var out []string
	for _, m := range o.ManagedFields {
		out = append(out, m.Manager+":"+string(m.Operation))
	}
	slices.Sort(out)
	return out
}

func TestApply_CreatesMergesAndTracksManagers(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	obj := nsPath("default", "targets") + "/web"
	alice := `apiVersion: cairn.dev/v1alpha1
kind: Target
metadata:
  name: web
  labels: {team: a}
spec:
  type: ssh
`
	created := c.do("PATCH", obj+"?fieldManager=alice", alice, "Content-Type", applyType).expect(t, http.StatusCreated).object(t)
	if got := managers(created); !slices.Equal(got, []string{"alice:Apply"}) {
		t.Fatalf("managers after the first apply: %v", got)
	}
	// Bob applies a label of his own: both keep theirs.
	bob := "{\"apiVersion\":\"cairn.dev/v1alpha1\",\"kind\":\"Target\",\"metadata\":{\"name\":\"web\",\"labels\":{\"owner\":\"b\"}}}"
	merged := c.do("PATCH", obj+"?fieldManager=bob", bob, "Content-Type", applyType).expect(t, http.StatusOK).object(t)
	if merged.Labels["team"] != "a" || merged.Labels["owner"] != "b" {
		t.Fatalf("labels after bob's apply: %v", merged.Labels)
	}
	if got := managers(merged); !slices.Equal(got, []string{"alice:Apply", "bob:Apply"}) {
		t.Fatalf("managers: %v", got)
	}
	// Bob changing alice's field is a conflict naming her and the field.
	steal := "{\"apiVersion\":\"cairn.dev/v1alpha1\",\"kind\":\"Target\",\"metadata\":{\"name\":\"web\"},\"spec\":{\"type\":\"kubernetes\"}}"
	st := c.do("PATCH", obj+"?fieldManager=bob", steal, "Content-Type", applyType).expect(t, http.StatusConflict).status(t)
	if !strings.Contains(st.Message, "alice") || !strings.Contains(st.Message, ".spec.type") {
		t.Fatalf("conflict message %q does not name the other manager and the field", st.Message)
	}
	// With force, bob takes it over.
	forced := c.do("PATCH", obj+"?fieldManager=bob&force=true", steal, "Content-Type", applyType).expect(t, http.StatusOK).object(t)
	if !strings.Contains(string(forced.Field("spec")), "kubernetes") {
		t.Fatalf("forced apply did not take effect: %s", forced.Field("spec"))
	}
	// A merge patch with a field manager on a tracked object is recorded
	// as an Update.
	labelled := c.do("PATCH", obj+"?fieldManager=kubectl-label", `{"metadata":{"labels":{"x":"y"}}}`,
		"Content-Type", string(api.MergePatch)).expect(t, http.StatusOK).object(t)
	if got := managers(labelled); !slices.Contains(got, "kubectl-label:"+string(metav1.ManagedFieldsOperationUpdate)) {
		t.Fatalf("managers after a labelled merge patch: %v", got)
	}
	// Removing a field from one's configuration removes it from the object
	// when nobody else owns it.
	// (Her spec.type now agrees with bob's: both own it, no conflict.)
	alice2 := strings.Replace(strings.Replace(alice, "  labels: {team: a}\n", "", 1), "type: ssh", "type: kubernetes", 1)
	after := c.do("PATCH", obj+"?fieldManager=alice", alice2, "Content-Type", applyType).expect(t, http.StatusOK).object(t)
	if _, ok := after.Labels["team"]; ok {
		t.Fatalf("alice's label stayed after she stopped applying it: %v", after.Labels)
	}
}

func TestApply_BadRequests(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	obj := nsPath("default", "targets") + "/web"
	cfg := "{\"apiVersion\":\"cairn.dev/v1alpha1\",\"kind\":\"Target\",\"metadata\":{\"name\":\"web\"},\"spec\":{\"type\":\"ssh\"}}"
	c.do("PATCH", obj, cfg, "Content-Type", applyType).expect(t, http.StatusBadRequest)                                                  // no field manager
	c.do("PATCH", nsPath("default", "targets")+"/other?fieldManager=m", cfg, "Content-Type", applyType).expect(t, http.StatusBadRequest) // name differs
	c.do("PATCH", obj+"?fieldManager=m", strings.Replace(cfg, `"spec"`, `"sepc"`, 1), "Content-Type", applyType).expect(t, http.StatusBadRequest)
	c.do("GET", obj, nil).expect(t, http.StatusNotFound)
	// A dry-run apply creates nothing.
	c.do("PATCH", obj+"?fieldManager=m&dryRun=All", cfg, "Content-Type", applyType).expect(t, http.StatusCreated)
	c.do("GET", obj, nil).expect(t, http.StatusNotFound)
}

// TestApply_EveryWriteRecordsManagedFields: as kube-apiserver, a create
// that names no field manager is recorded under the caller's name.
func TestApply_EveryWriteRecordsManagedFields(t *testing.T) {
	s := servertest.Start(t)
	c := newClient(t, s)
	cfg := "{\"apiVersion\":\"cairn.dev/v1alpha1\",\"kind\":\"Target\",\"metadata\":{\"name\":\"plain\"},\"spec\":{\"type\":\"ssh\"}}"
	o := c.do("POST", nsPath("default", "targets"), cfg).expect(t, http.StatusCreated).object(t)
	if got := managers(o); !slices.Equal(got, []string{"admin:Update"}) {
		t.Fatalf("a create without a field manager: managed fields %v, want the caller's update", got)
	}
	o = c.do("POST", nsPath("default", "targets")+"?fieldManager=kubectl-create",
		strings.Replace(cfg, "plain", "tracked", 1)).expect(t, http.StatusCreated).object(t)
	if got := managers(o); !slices.Equal(got, []string{"kubectl-create:Update"}) {
		t.Fatalf("a create with a field manager: %v", got)
	}
}

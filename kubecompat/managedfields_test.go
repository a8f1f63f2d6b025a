package kubecompat_test

import (
	"testing"

	"cairn.dev/cairn/cli/clitest"
)

// TestKubectl_LabelSurvivesServerSideApplyAfterCairnApply: an object
// created by `cairn apply` (no field manager), then changed by `kubectl
// apply` and `kubectl label`, keeps the label through a later `kubectl
// apply --server-side` of the same file: every write records
// managedFields, as kube-apiserver does, so the label is owned by
// kubectl-label and not by the applier.
func TestKubectl_LabelSurvivesServerSideApplyAfterCairnApply(t *testing.T) {
	c := startServer(t)
	for _, f := range []string{"namespace.yaml", "secret.yaml"} {
		if res := clitest.Run(t, c.srv.Config(), "apply", "-f", examplePath(f)); res.Error != nil {
			t.Fatalf("cairn apply -f %s: %v\n%s", f, res.Error, res.Err)
		}
	}
	c.must(t, "apply", "-f", examplePath("secret.yaml"))
	c.must(t, "label", "secret", "db-credentials", "-n", "demo", "tier=db")
	c.must(t, "apply", "--server-side", "-f", examplePath("secret.yaml"))
	s := get(t, c, "secrets", "demo", "db-credentials")
	if s.GetLabels()["tier"] != "db" || s.GetLabels()["app"] != "preview" {
		t.Errorf("labels after apply --server-side: %v, want tier=db kept beside app=preview (managedFields %v)",
			s.GetLabels(), s.GetManagedFields())
	}
}

package delete_test

import (
	"regexp"
	"testing"

	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/server/servertest"
)

func TestDelete_AlreadyDeletingNamesWhatHoldsIt(t *testing.T) {
	srv := servertest.Start(t)
	apply(t, srv, "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata:\n  name: held\n  finalizers: [example.com/hold]\n")
	if r := clitest.Run(t, srv.Config(), "delete", "secret", "held", "--wait=false"); r.Error != nil || r.Out != "secret/held marked for deletion\n" {
		t.Fatalf("first delete: %q %v", r.Out, r.Error)
	}
	r := clitest.Run(t, srv.Config(), "delete", "secret", "held", "--wait=false")
	want := regexp.MustCompile(`^secret/held is already being deleted \(for \d+s\), held by the finalizers? (.*, )?example.com/hold(, .*)?\n$`)
	if r.Error != nil || !want.MatchString(r.Out) {
		t.Fatalf("second delete: out %q, err %v; want %s", r.Out, r.Error, want)
	}
}

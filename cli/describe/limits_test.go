package describe_test

import (
	"context"
	"regexp"
	"testing"

	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/server/servertest"
)

func TestDescribe_NamespaceShowsItsLimitsAndUsage(t *testing.T) {
	srv := servertest.Start(t)
	r := clitest.RunContext(context.Background(), t, srv.Config(), clitest.Cmd{
		Args: []string{"apply", "-f", "-"},
		Stdin: "apiVersion: cairn.dev/v1alpha1\nkind: Namespace\nmetadata: {name: team}\nspec:\n  limits: {objects: 100}\n---\n" +
			"apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: db, namespace: team}\nstringData: {password: hunter2}\n",
	}, nil)
	if r.Error != nil {
		t.Fatalf("apply: %v %s", r.Error, r.Err)
	}
	r = clitest.Run(t, srv.Config(), "describe", "namespace", "team")
	if r.Error != nil {
		t.Fatalf("describe: %v %s", r.Error, r.Err)
	}
	for _, re := range []string{
		`(?m)^Spec:\n  limits:\n    objects: 100$`,
		`(?m)^  usage:\n    bytes: \d+\n    limits:\n      bytes: 512Mi\n      objects: 100\n    objects: 1\n    observedRevision: "\d+"$`,
	} {
		if !regexp.MustCompile(re).MatchString(r.Out) {
			t.Errorf("describe output does not match %s:\n%s", re, r.Out)
		}
	}
}

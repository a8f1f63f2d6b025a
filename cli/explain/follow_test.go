package explain_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
)

// TestExplain_FollowPrintsNewReconcilesUntilStopped: `cairn explain
// namespace/demo -f --controller gc` keeps printing the reconciles that
// happen after it started (the garbage collector's cascade once the
// namespace is deleted), and returns without error when stopped.
func TestExplain_FollowPrintsNewReconcilesUntilStopped(t *testing.T) {
	d, c := clitest.StartDaemon(t, daemon.Options{Controllers: controllers.List(controllers.Config{}), LeaderTTL: time.Second})
	ctx := context.Background()
	if _, err := c.Create(ctx, testkit.Object(api.KindNamespace, "", "demo")); err != nil {
		t.Fatal(err)
	}
	held := testkit.Object(api.KindSecret, "demo", "held", testkit.Finalizers("example.com/hold"))
	if _, err := c.Create(ctx, held); err != nil {
		t.Fatal(err)
	}
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	out := &clitest.Buffer{}
	done := make(chan clitest.Result, 1)
	go func() {
		done <- clitest.RunContext(fctx, t, d.ClientConfig(), clitest.Cmd{Args: []string{"explain", "namespace/demo", "-f", "--controller", "gc"}}, out)
	}()
	testkit.Eventually(t, 30*time.Second, "explain -f to print the object", func() bool {
		return strings.Contains(out.String(), "Namespace demo:")
	})
	if _, _, err := c.Delete(ctx, api.KindNamespace, "", "demo", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "explain -f to print the cascade that waits for the held secret", func() bool {
		return strings.Contains(out.String(), "Secret demo/held")
	})
	stop()
	select {
	case res := <-done:
		if res.Error != nil {
			t.Errorf("explain -f ended with %v\n%s", res.Error, res.Err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("explain -f did not stop with its context")
	}
	t.Logf("cairn explain namespace/demo -f:\n%s", out.String())
}

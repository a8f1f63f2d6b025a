package explain_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
)

// TestExplain_StuckNamespaceSaysWhichFinalizerOnWhichObjectHoldsIt is the
// question users ask most: why is my namespace stuck terminating? A
// Secret in it holds a finalizer no controller removes; `cairn explain
// namespace/demo` must name that object and that finalizer.
func TestExplain_StuckNamespaceSaysWhichFinalizerOnWhichObjectHoldsIt(t *testing.T) {
	d, c := clitest.StartDaemon(t, daemon.Options{Controllers: controllers.List(controllers.Config{}), LeaderTTL: time.Second})
	ctx := context.Background()
	if _, err := c.Create(ctx, testkit.Object(api.KindNamespace, "", "demo")); err != nil {
		t.Fatal(err)
	}
	held := testkit.Object(api.KindSecret, "demo", "held", testkit.Finalizers("example.com/hold"))
	if _, err := c.Create(ctx, held); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, testkit.Object(api.KindSecret, "demo", "plain")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Delete(ctx, api.KindNamespace, "", "demo", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the plain secret to go and the held one to stay", func() bool {
		_, err := c.Get(ctx, api.KindSecret, "demo", "plain")
		h, herr := c.Get(ctx, api.KindSecret, "demo", "held")
		return errors.Is(err, api.ErrNotFound) && herr == nil && h.Deleting() && !h.HasFinalizer(api.FinalizerCascadeDeletion)
	})
	var out string
	testkit.Eventually(t, 30*time.Second, "explain to name the held secret and its finalizer", func() bool {
		res := clitest.Run(t, d.ClientConfig(), "explain", "namespace/demo")
		out = res.Out + res.Err
		return res.Error == nil && strings.Contains(out, "Secret demo/held") && strings.Contains(out, "example.com/hold")
	})
	t.Logf("cairn explain namespace/demo:\n%s", out)

	// The held secret's own trace says what holds it.
	res := clitest.Run(t, d.ClientConfig(), "explain", "secret", "held", "-n", "demo")
	if res.Error != nil || !strings.Contains(res.Out, "example.com/hold") {
		t.Fatalf("explain secret held: %v\n%s%s", res.Error, res.Out, res.Err)
	}

	// Removing the finalizer unblocks the namespace.
	h, err := c.Get(ctx, api.KindSecret, "demo", "held")
	if err != nil {
		t.Fatal(err)
	}
	h.RemoveFinalizer("example.com/hold")
	if _, err := c.Update(ctx, h); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the namespace to go once nothing holds it", func() bool {
		_, err := c.Get(ctx, api.KindNamespace, "", "demo")
		return errors.Is(err, api.ErrNotFound)
	})
}

package explain_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
)

// TestExplain_RecreatedObjectDoesNotInheritItsPredecessorsTrace: traces
// are kept by uid. A namespace deleted (the garbage collector traces its
// cascade) and created again under the same name is another object:
// `cairn explain` shows none of the first one's reconciles.
func TestExplain_RecreatedObjectDoesNotInheritItsPredecessorsTrace(t *testing.T) {
	d, c := clitest.StartDaemon(t, daemon.Options{Controllers: controllers.List(controllers.Config{}), LeaderTTL: time.Second})
	ctx := context.Background()
	if _, err := c.Create(ctx, testkit.Object(api.KindNamespace, "", "demo")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, testkit.Object(api.KindSecret, "demo", "db")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Delete(ctx, api.KindNamespace, "", "demo", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the namespace to go", func() bool {
		_, err := c.Get(ctx, api.KindNamespace, "", "demo")
		return errors.Is(err, api.ErrNotFound)
	})
	traceOf := func() api.Trace {
		t.Helper()
		res := clitest.Run(t, d.ClientConfig(), "explain", "namespace/demo", "-o", "json")
		if res.Error != nil {
			t.Fatalf("explain: %v\n%s", res.Error, res.Err)
		}
		var tr api.Trace
		if err := json.Unmarshal([]byte(res.Out), &tr); err != nil {
			t.Fatalf("explain -o json: %v\n%s", err, res.Out)
		}
		return tr
	}
	if old := traceOf(); len(old.Reconciles) == 0 {
		t.Fatal("the deleted namespace has no trace: the test would prove nothing")
	}

	again, err := c.Create(ctx, testkit.Object(api.KindNamespace, "", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range traceOf().Reconciles {
		if r.Start.Before(again.CreationTimestamp) {
			t.Errorf("the new namespace/demo (uid %s) shows a reconcile of its predecessor: %s at %s: %v",
				again.UID, r.Controller, r.Start, r.Steps)
		}
	}
}

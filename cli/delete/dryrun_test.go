package delete_test

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

// TestDelete_DryRunPrintsWhatTheDeletionWouldTake: `cairn delete
// KIND/NAME --dry-run` prints the tree of what would go, the counts per
// kind, the protected object that would block it and the dependent that
// would only be detached, and deletes nothing.
func TestDelete_DryRunPrintsWhatTheDeletionWouldTake(t *testing.T) {
	gc, err := controllers.Select(controllers.List(controllers.Config{}), "gc")
	if err != nil {
		t.Fatal(err)
	}
	d, c := clitest.StartDaemon(t, daemon.Options{Controllers: gc, LeaderTTL: time.Second})
	ctx := context.Background()
	mk := func(kind, name string, opts ...testkit.Opt) *api.Object {
		o, err := c.Create(ctx, testkit.Object(kind, api.DefaultNamespace, name, opts...))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	root, keeper := mk(api.KindDataObject, "root"), mk(api.KindDataObject, "keeper")
	a := mk(api.KindDataObject, "a", testkit.OwnedBy(root))
	mk(api.KindDataObject, "c", testkit.OwnedBy(a))
	if _, err := c.Create(ctx, testkit.Secret(api.DefaultNamespace, "t", nil, testkit.OwnedBy(root))); err != nil {
		t.Fatal(err)
	}
	mk(api.KindDataObject, "p", testkit.OwnedBy(root), testkit.Annotations(api.AnnotationDeletionProtection, "true"))
	mk(api.KindDataObject, "s", testkit.OwnedBy(root, keeper))

	want := strings.Join([]string{
		"Deleting dataobject/root would take 4 objects (dry run: nothing was deleted):",
		"dataobject/root (default)",
		"├── dataobject/a (default)",
		"│   └── dataobject/c (default)",
		"├── dataobject/p (default)  [protected: blocks the deletion]",
		"└── secret/t (default)",
		"By kind: DataObject 3, Secret 1",
	}, "\n")
	var out string
	testkit.EventuallyNil(t, 15*time.Second, "the preview", func() error {
		r := clitest.Run(t, d.ClientConfig(), "delete", "dataobject/root", "--dry-run")
		out = r.Out
		if r.Error != nil || !strings.Contains(r.Out, want) {
			return &previewErr{r.Out + r.Err}
		}
		return nil
	})
	for _, s := range []string{
		"Blocked by 1 protected object(s) (annotation cairn.dev/deletion-protection: \"true\")", "  dataobject/p (default)",
		"Detached, not deleted (they keep another live owner):\n  dataobject/s (default)",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("the preview lacks %q:\n%s", s, out)
		}
	}
	if o, err := c.Get(ctx, api.KindDataObject, api.DefaultNamespace, "root"); err != nil || o.Deleting() {
		t.Fatalf("after a dry run the object is %v (err %v), want it untouched", o, err)
	}
	if r := clitest.Run(t, d.ClientConfig(), "delete", "dataobject/nope", "--dry-run"); r.Error == nil || !strings.Contains(r.Err, "not found") {
		t.Errorf("a dry run of no object: %v %q", r.Error, r.Err)
	}
	if r := clitest.Run(t, d.ClientConfig(), "delete", "dataobject/root", "--dry-run", "--wait"); r.Error == nil || !strings.Contains(r.Err, "--wait") {
		t.Errorf("--dry-run with --wait: %v %q", r.Error, r.Err)
	}
}

type previewErr struct{ out string }

func (e *previewErr) Error() string { return "output:\n" + e.out }

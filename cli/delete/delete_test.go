package delete_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

func apply(t *testing.T, srv *servertest.Server, manifest string) {
	t.Helper()
	r := clitest.RunContext(context.Background(), t, srv.Config(),
		clitest.Cmd{Args: []string{"apply", "-f", "-"}, Stdin: manifest}, nil)
	if r.Error != nil {
		t.Fatalf("apply: %v %s", r.Error, r.Err)
	}
}

// finish removes every finalizer of a deleting object, as the garbage
// collector would, once it is marked.
func finish(t *testing.T, srv *servertest.Server, kind, ns, name string) {
	t.Helper()
	ctx := identity.With(context.Background(), identity.System()) // for the registry
	testkit.Eventually(t, 10*time.Second, name+" marked for deletion", func() bool {
		o, err := srv.Registry.Get(ctx, kind, ns, name)
		if err != nil {
			t.Fatalf("finish: %v", err)
		}
		return o.Deleting()
	})
	if _, err := srv.Registry.Patch(ctx, kind, ns, name, []byte(`{"metadata":{"finalizers":null}}`), false); err != nil {
		t.Fatalf("finish: %v", err)
	}
}

func TestDelete_MarksThenWaitBlocksUntilGone(t *testing.T) {
	srv := servertest.Start(t)
	apply(t, srv, "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: a}\n---\napiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: b}\n")

	r := clitest.Run(t, srv.Config(), "delete", "secret", "a")
	if r.Error != nil || r.Out != "secret/a marked for deletion\n" {
		t.Fatalf("delete: %q %v %q", r.Out, r.Error, r.Err)
	}

	waited := make(chan clitest.Result, 1)
	go func() {
		waited <- clitest.Run(t, srv.Config(), "delete", "secrets", "b", "--wait", "--timeout", "20s")
	}()
	finish(t, srv, "Secret", "default", "b")
	r = <-waited
	if r.Error != nil || r.Out != "secret/b marked for deletion\nsecret/b deleted\n" {
		t.Fatalf("delete --wait: %q %v %q", r.Out, r.Error, r.Err)
	}
	if _, err := srv.Registry.Get(identity.With(context.Background(), identity.System()), "Secret", "default", "b"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("after delete --wait: %v, want NotFound", err)
	}
}

func TestDelete_WaitTimesOutSayingWhatItSaw(t *testing.T) {
	srv := servertest.Start(t)
	apply(t, srv, "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: stuck}\n")
	start := time.Now()
	r := clitest.Run(t, srv.Config(), "delete", "secret", "stuck", "--wait", "--timeout", "300ms")
	if r.Error == nil {
		t.Fatalf("delete --wait of a stuck object succeeded: %q", r.Out)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("the timeout was not honoured")
	}
	for _, w := range []string{"timed out after 300ms waiting for secret/stuck in namespace default to be deleted",
		"finalizers [cairn.dev/cascade-deletion]"} {
		if !strings.Contains(r.Err, w) {
			t.Errorf("stderr %q lacks %q", r.Err, w)
		}
	}
}

func TestDelete_ForceRemovesAtOnceForAdminsOnly(t *testing.T) {
	srv := servertest.Start(t)
	apply(t, srv, "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: a, finalizers: [test/hold]}\n---\napiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: b}\n")

	user := srv.NewToken(t, identity.User{Name: "alice"})
	cfg := srv.Config()
	cfg.Token = user
	r := clitest.Run(t, cfg, "delete", "secret", "b", "--force")
	if r.Error == nil || !strings.Contains(r.Err, "Error: ") {
		t.Errorf("a non-admin forced a deletion: %q %v", r.Out, r.Error)
	}

	r = clitest.Run(t, srv.Config(), "delete", "secret", "a", "b", "--force")
	if r.Error != nil || r.Out != "secret/a deleted\nsecret/b deleted\n" {
		t.Fatalf("delete --force: %q %v %q", r.Out, r.Error, r.Err)
	}
	for _, n := range []string{"a", "b"} {
		if _, err := srv.Registry.Get(identity.With(context.Background(), identity.System()), "Secret", "default", n); !errors.Is(err, api.ErrNotFound) {
			t.Errorf("after delete --force, %s: %v", n, err)
		}
	}
}

func TestDelete_FromManifestAndMissingObjects(t *testing.T) {
	srv := servertest.Start(t)
	apply(t, srv, "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: a}\n")
	f := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(f, []byte("kind: Secret\nmetadata: {name: a}\n---\nkind: Secret\nmetadata: {name: ghost}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := clitest.Run(t, srv.Config(), "delete", "-f", f)
	if r.Error == nil || r.Out != "secret/a marked for deletion\n" || !strings.Contains(r.Err, f+`:4: Secret "ghost" not found`) {
		t.Errorf("delete -f: out %q err %v stderr %q", r.Out, r.Error, r.Err)
	}
	r = clitest.Run(t, srv.Config(), "delete", "secret", "ghost", "--ignore-not-found")
	if r.Error != nil || r.Out != "" {
		t.Errorf("--ignore-not-found: %q %v", r.Out, r.Error)
	}
	r = clitest.Run(t, srv.Config(), "delete", "secret")
	if r.Error == nil || !strings.Contains(r.Err, "cairn delete KIND NAME") {
		t.Errorf("delete without a name: %v %q", r.Error, r.Err)
	}
}

func TestDelete_CascadeAndDryRun(t *testing.T) {
	srv := servertest.Start(t)
	apply(t, srv, "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: owner}\n")
	ctx := context.Background()
	c := srv.Client(t)
	owner, err := c.Get(ctx, "Secret", "default", "owner")
	if err != nil {
		t.Fatal(err)
	}
	dep := testkit.Secret("default", "dep", nil, testkit.OwnedBy(owner))
	if _, err := c.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	// A server dry run says what would happen and changes nothing.
	r := clitest.Run(t, srv.Config(), "delete", "secret", "owner", "--dry-run=server")
	if r.Error != nil || !strings.Contains(r.Out, "secret/owner marked for deletion (server dry run)") {
		t.Fatalf("dry run: %q %q %v", r.Out, r.Err, r.Error)
	}
	if o, err := c.Get(ctx, "Secret", "default", "owner"); err != nil || o.Deleting() {
		t.Fatalf("after a dry run the owner is %+v, %v", o, err)
	}
	// Orphan: the owner goes once released (no collector runs here, so it
	// stays marked with the orphan finalizer), background: gone at once.
	r = clitest.Run(t, srv.Config(), "delete", "secret", "owner", "--cascade=orphan")
	if r.Error != nil {
		t.Fatalf("orphan: %v %s", r.Error, r.Err)
	}
	if o, err := c.Get(ctx, "Secret", "default", "owner"); err != nil || !o.HasFinalizer(api.FinalizerOrphan) {
		t.Fatalf("after --cascade=orphan the owner is %+v, %v; want it marked with %s", o, err, api.FinalizerOrphan)
	}
	r = clitest.Run(t, srv.Config(), "delete", "secret", "dep", "--cascade=background")
	if r.Error != nil || !strings.Contains(r.Out, "secret/dep deleted") {
		t.Fatalf("background: %q %v", r.Out, r.Error)
	}
	if r := clitest.Run(t, srv.Config(), "delete", "secret", "owner", "--cascade=sideways"); r.Error == nil || !strings.Contains(r.Err, "--cascade") {
		t.Fatalf("a bad --cascade: %q %v", r.Err, r.Error)
	}
}

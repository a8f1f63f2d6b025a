package wait_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/server/servertest"
)

func TestWait_ForPhaseSetByStatusUpdate(t *testing.T) {
	srv := servertest.Start(t)
	ctx := identity.With(context.Background(), identity.System()) // for the registry
	r := clitest.RunContext(ctx, t, srv.Config(),
		clitest.Cmd{Args: []string{"apply", "-f", "-"}, Stdin: "apiVersion: cairn.dev/v1alpha1\nkind: Namespace\nmetadata: {name: team}\n"}, nil)
	if r.Error != nil {
		t.Fatalf("apply: %v", r.Error)
	}
	done := make(chan clitest.Result, 1)
	var out clitest.Buffer
	go func() {
		done <- clitest.RunContext(ctx, t, srv.Config(),
			clitest.Cmd{Args: []string{"wait", "ns", "team", "--for", "phase=Ready", "--timeout", "20s"}}, &out)
	}()
	// Once the wait watches, cut its watch as a network failure would; it
	// must resume, and then see the status change.
	watching(t, srv)
	srv.CloseWatches()
	watching(t, srv)
	ns, err := srv.Registry.Get(ctx, "Namespace", "", "team")
	if err != nil {
		t.Fatal(err)
	}
	ns.SetField("status", []byte(`{"phase":"Ready"}`))
	if _, err := srv.Registry.UpdateStatus(ctx, ns); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.Error != nil || r.Out != "namespace/team condition met (have phase=Ready)\n" {
			t.Errorf("wait: %q %v %q", r.Out, r.Error, r.Err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("wait did not return")
	}
}

// watching blocks until the server has exactly one open watch.
func watching(t *testing.T, srv *servertest.Server) {
	t.Helper()
	testkit.EventuallyNil(t, 10*time.Second, "one open watch", func() error {
		if n := srv.API.OpenWatches(); n != 1 {
			return fmt.Errorf("open watches: %d, want 1", n)
		}
		return nil
	})
}

func TestWait_ForJSONPathOfAnObjectCreatedLater(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	done := make(chan clitest.Result, 1)
	go func() {
		done <- clitest.RunContext(ctx, t, srv.Config(),
			clitest.Cmd{Args: []string{"wait", "secret", "late", "--for", "jsonpath={.type}=tls", "--timeout", "20s"}}, nil)
	}()
	watching(t, srv)
	r := clitest.RunContext(ctx, t, srv.Config(),
		clitest.Cmd{Args: []string{"apply", "-f", "-"}, Stdin: "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: late}\ntype: tls\n"}, nil)
	if r.Error != nil {
		t.Fatalf("apply: %v", r.Error)
	}
	select {
	case r := <-done:
		if r.Error != nil || !strings.Contains(r.Out, "secret/late condition met") {
			t.Errorf("wait: %q %v %q", r.Out, r.Error, r.Err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("wait did not return")
	}
}

func TestWait_TimeoutSaysWhatItWaitedForAndSawLast(t *testing.T) {
	srv := servertest.Start(t)
	r := clitest.RunContext(context.Background(), t, srv.Config(),
		clitest.Cmd{Args: []string{"apply", "-f", "-"}, Stdin: "apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: s}\n"}, nil)
	if r.Error != nil {
		t.Fatalf("apply: %v", r.Error)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"delete of a live object", []string{"wait", "secret", "s", "--for", "delete", "--timeout", "200ms"},
			"timed out after 200ms waiting for secret/s in namespace default to be deleted; last seen: it exists and is not marked for deletion"},
		{"phase never set", []string{"wait", "secret", "s", "--for", "phase=Ready", "--timeout", "200ms"},
			"to have phase=Ready; last seen: .status.phase is not set"},
		{"object that never appears", []string{"wait", "secret", "nope", "--for", "jsonpath=.type=x", "--timeout", "200ms"},
			"to have .type=x; last seen: it does not exist"},
		{"value differs", []string{"wait", "secret", "s", "--for", "jsonpath=.type=x", "--timeout", "200ms"},
			`last seen: .type is "Opaque"`},
		{"secret values are not shown", []string{"wait", "secret", "s", "--for", "jsonpath=.data.k=x", "--timeout", "200ms"},
			"last seen: .data.k is not set"},
		{"bad condition", []string{"wait", "secret", "s", "--for", "ready"},
			`--for "ready": use delete, phase=PHASE or jsonpath=.path=value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := clitest.Run(t, srv.Config(), tt.args...)
			if r.Error == nil || !strings.Contains(r.Err, tt.want) {
				t.Errorf("wait: err %v, stderr %q; want %q", r.Error, r.Err, tt.want)
			}
		})
	}
}

func TestWait_ForDeleteOfMissingObjectReturnsAtOnce(t *testing.T) {
	srv := servertest.Start(t)
	r := clitest.Run(t, srv.Config(), "wait", "secret", "gone", "--for", "delete")
	if r.Error != nil || r.Out != "secret/gone deleted\n" {
		t.Errorf("wait --for delete: %q %v %q", r.Out, r.Error, r.Err)
	}
}

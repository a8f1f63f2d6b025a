package unitlog_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/runtime"
	"cairn.dev/cairn/runtime/local"
	"cairn.dev/cairn/unitlog"
)

// A unit that wrote nothing has an empty log, kept like any other. Its
// Secret was refused before (its data.log written as null: 422), which
// the soak's server logs showed once per silent unit.
func TestKeep_KeepsTheEmptyOutputOfASilentUnit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, c := clitest.StartDaemon(t, daemon.Options{})
	rt, err := local.New(local.Options{Root: filepath.Join(t.TempDir(), "runtime"), Isolation: local.Isolation{None: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	if _, err := rt.Start(ctx, runtime.Spec{ID: "silent", Argv: []string{"true"}, Env: []string{"PATH=/usr/bin:/bin"}}); err != nil {
		t.Fatal(err)
	}
	if st, err := rt.Wait(ctx, "silent"); err != nil || st.Phase != runtime.PhaseExited {
		t.Fatalf("the unit ended as %+v, %v; want Exited", st, err)
	}
	owner, err := c.Create(ctx, testkit.Secret("default", "owner", map[string]string{"k": "v"}))
	if err != nil {
		t.Fatal(err)
	}
	ref := api.OwnerReference{APIVersion: api.APIVersion, Kind: api.KindSecret, Name: owner.Name, UID: owner.UID}

	if err := unitlog.New(c, rt, 0).Keep(ctx, "default", ref, "silent"); err != nil {
		t.Fatalf("Keep of a unit that wrote nothing: %v, want its empty output kept", err)
	}
	sec, err := client.For[*api.Secret](c).Get(ctx, "default", api.UnitLogSecretName("silent"))
	if err != nil {
		t.Fatal(err)
	}
	if log, ok := sec.Data[api.UnitLogKey]; !ok || len(log) != 0 {
		t.Fatalf("kept log %q (present: %v), want an empty one", log, ok)
	}
}

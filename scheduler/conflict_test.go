package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/runtime"
	rtlocal "cairn.dev/cairn/runtime/local"
)

// TestObserver_409And404TreatTheWorkerAsEndedOrDeleted drives the seed's
// two answers to a status write that lost: a 409 whose fresh read shows a
// terminal worker (canceled meanwhile) kills and cleans up the unit at
// once; a 404 (the event deleted meanwhile) removes the unit entirely; a
// 409 from a plain concurrent write is no error and kills nothing.
func TestObserver_409And404TreatTheWorkerAsEndedOrDeleted(t *testing.T) {
	d, err := daemon.Start(context.Background(), daemon.Options{Listen: "127.0.0.1:0", DataDir: filepath.Join(t.TempDir(), "data"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop() })
	c, err := client.NewHTTP(d.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	testkit.UnitReachable(t)
	root := filepath.Join(t.TempDir(), "rt")
	rt, err := rtlocal.New(rtlocal.Options{Root: root, KillGrace: time.Second,
		Isolation: rtlocal.Isolation{None: os.Geteuid() != 0}}) // units get uids of their own when the tests run as root
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	s, err := newScheduler(c, Options{Runtime: rt}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t)
	if _, err := client.For[*api.Project](c).Create(ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: api.ProjectSpec{WorkerTemplate: api.WorkerSpec{Command: []string{"sleep", "300"}}}}); err != nil {
		t.Fatal(err)
	}
	running := func() (*api.Event, string) {
		spec, _ := json.Marshal(api.EventSpec{Project: "p", Source: "s", Type: "t"})
		obj, err := c.Create(ctx, &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindEvent},
			ObjectMeta: api.ObjectMeta{Namespace: "default"}, Fields: map[string]json.RawMessage{"spec": spec}})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := client.Convert[*api.Event](obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, ph := range []api.EventPhase{api.PhaseStarting, api.PhaseRunning} {
			ev.Status.Worker.Phase = ph
			if ev, err = client.For[*api.Event](c).UpdateStatus(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		id := api.WorkerUnitID(ev.UID)
		if _, err := rt.Start(ctx, runtime.Spec{ID: id, Argv: []string{"/bin/sleep", "300"}}); err != nil {
			t.Fatal(err)
		}
		return ev, id
	}

	// 409: canceled while the observer held an older version.
	stale, id := running()
	if _, err := c.Action(ctx, client.ActionRequest{Kind: api.KindEvent, Namespace: "default", Name: stale.Name, Action: "cancel"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.conflict(ctx, stale); err != nil {
		t.Fatalf("409 handling: %v", err)
	}
	st, err := rt.State(ctx, id)
	if err != nil || !st.Phase.Done() {
		t.Fatalf("after a 409 on an aborted event the unit is %+v (%v), want it killed", st, err)
	}
	if _, err := os.Stat(filepath.Join(root, "units", id, "workspace")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after a 409 the workspace is still there (%v)", err)
	}

	// 409 from a plain concurrent write (a label, a claim of the pass):
	// nothing ended, so it is no error, only an older version to observe
	// again soon; the unit runs on.
	older, id := running()
	newer := *older
	newer.Labels = map[string]string{"touched": "yes"}
	if _, err := client.For[*api.Event](c).Update(ctx, &newer); err != nil {
		t.Fatal(err)
	}
	res, err := s.conflict(ctx, older)
	if err != nil || res.RequeueAfter <= 0 {
		t.Fatalf("a plain 409 gave %+v, %v; want no error and an early look again", res, err)
	}
	if st, err := rt.State(ctx, id); err != nil || st.Phase != runtime.PhaseRunning {
		t.Fatalf("after a plain 409 the unit is %+v (%v), want it running on", st, err)
	}

	// 404: deleted while the observer held it.
	gone, id := running()
	if _, _, err := c.Delete(ctx, api.KindEvent, "default", gone.Name, api.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.conflict(ctx, gone); err != nil {
		t.Fatalf("404 handling: %v", err)
	}
	if _, err := rt.State(ctx, id); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("after a 404 the unit is still known (%v), want it removed with its logs", err)
	}
}

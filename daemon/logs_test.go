package daemon_test

import (
	"bufio"
	"context"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/lease"
	"cairn.dev/cairn/manager"
)

// TestLogs_PureAPIServerServesAControllerManagersUnitsAndKeepsTheirTail:
// with a pure API server and a separate controller manager running the
// events, `logs` through the API server follows a running worker (the
// request is forwarded to the manager), the failed worker's status quotes
// its output's last lines, the tail of its output (bounded by
// --log-tail-bytes) is kept through the API in a Secret owned by the
// event, and once the manager and its runtime dir are gone the API server
// still serves that tail.
func TestLogs_PureAPIServerServesAControllerManagersUnitsAndKeepsTheirTail(t *testing.T) {
	d := start(t, daemon.Options{DataDir: dataDir(t)}) // a pure API server
	c := httpClient(t, d)
	ctx := testkit.Context(t)
	opts := cmOptions(t, d)
	const tailBytes = 100
	ctrls, err := controllers.Select(controllers.List(controllers.Config{LogTailBytes: tailBytes}), "events")
	if err != nil {
		t.Fatal(err)
	}
	opts.Controllers = ctrls
	cm, err := daemon.StartControllerManager(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cm.Stop() })
	testkit.Eventually(t, 15*time.Second, "the controller manager to lead", func() bool {
		id, err := lease.Current(ctx, c, manager.LeaseName)
		return err == nil && id == cm.URL()
	})

	// The worker says "first", waits for the test's go-ahead, writes a
	// long line and "second", and fails.
	gate := filepath.Join(testkit.UnitWritableDir(t), "go")
	script := `echo first; while [ ! -e "` + gate + `" ]; do sleep 0.05; done; ` +
		`printf '%0150d\n' 0; echo second; exit 3`
	if _, err := client.For[*api.Project](c).Create(ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: api.ProjectSpec{WorkerTemplate: api.WorkerSpec{Command: []string{"sh", "-c", script}}}}); err != nil {
		t.Fatal(err)
	}
	ev, err := client.For[*api.Event](c).Create(ctx, &api.Event{ObjectMeta: api.ObjectMeta{Name: "e", Namespace: "default"},
		Spec: api.EventSpec{Project: "p", Source: "test", Type: "run"}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, "the worker to run", func() bool {
		cur, err := client.For[*api.Event](c).Get(ctx, "default", "e")
		return err == nil && cur.Status.Worker.Phase == api.PhaseRunning
	})

	// Follow through the API server: forwarded to the manager.
	rc, err := c.ActionStream(ctx, client.ActionRequest{Method: "GET", Kind: api.KindEvent, Namespace: "default", Name: "e",
		Action: api.ActionLogs, Query: url.Values{"follow": {"true"}}})
	if err != nil {
		t.Fatalf("logs -f of a running worker through a pure API server: %v, want its output", err)
	}
	defer rc.Close()
	r := bufio.NewReader(rc)
	if line, err := r.ReadString('\n'); err != nil || line != "first\n" {
		t.Fatalf("first line followed: %q %v", line, err)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(r)
	if err != nil || !strings.HasSuffix(string(rest), "\nsecond\n") {
		t.Fatalf("the rest of the followed output: %q %v, want it to end with second", rest, err)
	}

	// The failed worker's status quotes the end of its output.
	testkit.Eventually(t, 30*time.Second, "the worker to fail", func() bool {
		cur, err := client.For[*api.Event](c).Get(ctx, "default", "e")
		if err == nil && cur.Status.Worker.Phase == api.PhaseFailed {
			if !strings.Contains(cur.Status.Worker.Reason, "exited with code 3; output ends with: ") ||
				!strings.HasSuffix(cur.Status.Worker.Reason, " | second") {
				t.Fatalf("the failed worker's reason %q does not quote its output's last lines", cur.Status.Worker.Reason)
			}
			return true
		}
		return false
	})

	// Its tail is kept through the API, bounded, owned by the event.
	secName := api.UnitLogSecretName(api.WorkerUnitID(ev.UID))
	var sec *api.Secret
	testkit.EventuallyNil(t, 30*time.Second, "the worker's output to be kept", func() error {
		sec, err = client.For[*api.Secret](c).Get(ctx, "default", secName)
		return err
	})
	kept := string(sec.Data[api.UnitLogKey])
	if len(kept) > tailBytes || !strings.HasSuffix(kept, "\nsecond\n") || strings.Contains(kept, "first") {
		t.Fatalf("kept output (%d bytes) = %q, want the last %d bytes at most, ending with second", len(kept), kept, tailBytes)
	}
	if len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].UID != ev.UID || sec.Annotations[api.AnnotationLogTruncated] != "true" {
		t.Fatalf("kept output's owners %+v, annotations %v: want the event, truncated", sec.OwnerReferences, sec.Annotations)
	}

	// The host that ran it is lost: the API server serves the kept tail.
	if err := cm.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(opts.RuntimeDir); err != nil {
		t.Fatal(err)
	}
	rc2, err := c.ActionStream(ctx, client.ActionRequest{Method: "GET", Kind: api.KindEvent, Namespace: "default", Name: "e", Action: api.ActionLogs})
	if err != nil {
		t.Fatalf("logs of an ended worker whose host is gone: %v, want the kept tail", err)
	}
	got, err := io.ReadAll(rc2)
	rc2.Close()
	if err != nil || string(got) != kept {
		t.Fatalf("logs once the host is gone: %q %v, want the kept tail %q", got, err, kept)
	}
}

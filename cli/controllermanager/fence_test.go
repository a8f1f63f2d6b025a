package controllermanager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/lease"
	"cairn.dev/cairn/manager"
)

// fencedManager is one `cairn controller-manager` process of the fencing
// test, with the runtime dir whose unit records it counts.
type fencedManager struct {
	p          *clitest.Proc
	runtimeDir string
}

// units returns the ids of the units the manager's runtime ever started:
// the runtime's own records (<runtime-dir>/units/<id>).
func (m *fencedManager) units(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(m.runtimeDir, "units"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out
}

func (m *fencedManager) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := m.p.Cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// TestControllerManager_LeaderPausedAcrossItsLeaseExpiry_NoUnitStartsTwice
// runs two controller managers, each with a runtime of its own, against
// one API server. Events keep coming whose workers start; the leader is
// stopped (SIGSTOP) across its lease expiry, at a different moment each
// round, the other takes over and starts units, and the first resumes
// (SIGCONT) while the second runs. No unit id was ever started by both
// runtimes, as their own unit records show.
func TestControllerManager_LeaderPausedAcrossItsLeaseExpiry_NoUnitStartsTwice(t *testing.T) {
	ctx := context.Background()
	d, c := clitest.StartDaemon(t, daemon.Options{})
	dir := t.TempDir()
	tokenFile, caFile := filepath.Join(dir, "token"), filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(tokenFile, []byte(d.Token()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(caFile, []byte(d.ClientConfig().CertificateAuthorityData), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := clitest.BuildCairn(t)
	managers := map[string]*fencedManager{}
	for i := range 2 {
		rt := filepath.Join(t.TempDir(), fmt.Sprintf("runtime%d", i))
		cmd := exec.Command(bin, append([]string{"controller-manager", "--server", d.URL(), "--certificate-authority", caFile,
			"--token-file", tokenFile, "--listen", "127.0.0.1:0", "--leader-ttl", leaderTTL.String(),
			"--controllers", "events"}, clitest.RuntimeFlags(t, rt)...)...)
		m := &fencedManager{p: clitest.Start(t, cmd), runtimeDir: rt}
		managers[m.p.URL] = m
	}
	tpl := api.WorkerSpec{Command: []string{"/bin/sh", "-c", "sleep 2"}}
	if _, err := client.For[*api.Project](c).Create(ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: "shop", Namespace: "default"},
		Spec: api.ProjectSpec{WorkerTemplate: tpl}}); err != nil {
		t.Fatal(err)
	}
	leader := func() *fencedManager {
		var m *fencedManager
		testkit.Eventually(t, 30*time.Second, "a controller manager to hold the lease", func() bool {
			holder, _ := lease.Current(ctx, c, manager.LeaseName)
			m = managers[holder]
			return m != nil
		})
		return m
	}
	n := 0
	burst := func(k int) {
		for range k {
			n++
			createEvent(t, c, fmt.Sprintf("e%03d", n))
		}
	}
	// The moment of the SIGSTOP, each round: amid the claims of a burst,
	// once its workers run, and a while after.
	pauses := []time.Duration{0, 300 * time.Millisecond, 1200 * time.Millisecond, 50 * time.Millisecond}
	for round, pause := range pauses {
		first := leader()
		burst(8)
		time.Sleep(pause) // the moment of the pause is the variable of the round, not a synchronization
		first.signal(t, syscall.SIGSTOP)
		var second *fencedManager
		testkit.Eventually(t, 30*time.Second, "the other manager to take the lease over", func() bool {
			holder, _ := lease.Current(ctx, c, manager.LeaseName)
			second = managers[holder]
			return second != nil && second != first
		})
		before := len(second.units(t))
		burst(6)
		testkit.Eventually(t, 30*time.Second, "the new leader to start units", func() bool { return len(second.units(t)) > before })
		ended := termsEnded(first.p.Log())
		first.signal(t, syscall.SIGCONT)
		testkit.Eventually(t, 30*time.Second, "the resumed manager to see its term lost", func() bool {
			return termsEnded(first.p.Log()) > ended
		})
		t.Logf("round %d: paused %s after a burst; %s took over", round, pause, second.p.URL)
	}
	// Every event settles: its worker ended, or was given up as lost.
	testkit.EventuallyNil(t, 2*time.Minute, "every worker to end", func() error {
		evs, _, err := client.For[*api.Event](c).List(ctx, "default", api.ListOptions{})
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if ph := ev.Status.Worker.Phase; !ph.Terminal() && ph != api.PhaseUnknown {
				return fmt.Errorf("event %s is %s", ev.Name, ph)
			}
		}
		return nil
	})
	var all []map[string]bool
	for _, m := range managers {
		all = append(all, m.units(t))
	}
	twice := 0
	for id := range all[0] {
		if all[1][id] {
			twice++
			t.Errorf("unit %s was started by both controller managers' runtimes", id)
		}
	}
	t.Logf("%d events; units started: %d and %d; started twice: %d", n, len(all[0]), len(all[1]), twice)
	if len(all[0]) == 0 || len(all[1]) == 0 {
		t.Fatal("one runtime started no unit: the takeovers proved nothing")
	}
}

func createEvent(t *testing.T, c client.Interface, name string) {
	t.Helper()
	spec, _ := json.Marshal(api.EventSpec{Project: "shop", Source: "git", Type: "push"})
	_, err := c.Create(context.Background(), &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindEvent},
		ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name}, Fields: map[string]json.RawMessage{"spec": spec}})
	if err != nil {
		t.Fatal(err)
	}
}

// termsEnded counts the leadership terms a manager's log says ended.
func termsEnded(log string) int {
	return strings.Count(log, "leadership lost") + strings.Count(log, "stepping down")
}

package event_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
)

func TestExample_HelloWorkerCreatesTwoJobsAndSucceeds(t *testing.T) {
	d, c := clitest.StartDaemon(t, daemon.Options{Controllers: controllers.List(controllers.Config{})})
	playHelloExample(t, d, c)
}

// playHelloExample applies examples/events/hello.yaml on d, creates its
// event as the README does, and asserts the worker and both jobs succeed,
// with their logs through cairn logs.
func playHelloExample(t *testing.T, d *daemon.Daemon, c client.Interface) {
	t.Helper()
	example := filepath.Join("..", "..", "examples", "events", "hello.yaml")
	if r := clitest.Run(t, d.ClientConfig(), "apply", "-f", example); r.Error != nil || r.Out != "project/hello created\n" {
		t.Fatalf("apply: %q %v", r.Out, r.Error)
	}
	r := clitest.Run(t, d.ClientConfig(), "event", "create", "--project", "hello", "--source", "example", "--type", "run")
	name, ok := strings.CutPrefix(strings.TrimSpace(r.Out), "event/")
	if r.Error != nil || !ok || !strings.HasSuffix(name, " created") {
		t.Fatalf("event create: %q %v", r.Out, r.Error)
	}
	name = strings.TrimSuffix(name, " created")
	var ev *api.Event
	testkit.Eventually(t, 60*time.Second, "the hello event to succeed", func() bool {
		var err error
		ev, err = client.For[*api.Event](c).Get(context.Background(), "default", name)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Status.Worker.Phase.Terminal() && ev.Status.Worker.Phase != api.PhaseSucceeded {
			logs := clitest.Run(t, d.ClientConfig(), "logs", "event/"+name)
			t.Fatalf("worker %s (%s); logs:\n%s", ev.Status.Worker.Phase, ev.Status.Worker.Reason, logs.Out)
		}
		return ev.Status.Worker.Phase == api.PhaseSucceeded
	})
	if got := ev.Status.JobPhases; got != "build:SUCCEEDED,test:SUCCEEDED" {
		t.Fatalf("jobs = %q, want both SUCCEEDED", got)
	}
	if r := clitest.Run(t, d.ClientConfig(), "logs", "event/"+name); !strings.Contains(r.Out, "created job build") || !strings.Contains(r.Out, "both jobs succeeded") {
		t.Fatalf("worker logs: %q %v", r.Out, r.Error)
	}
	if r := clitest.Run(t, d.ClientConfig(), "logs", "event/"+name, "--job", "test", "-f"); r.Out != "test job of "+name+"\n" {
		t.Fatalf("job logs: %q %v", r.Out, r.Error)
	}
	r = clitest.Run(t, d.ClientConfig(), "get", "events")
	if !strings.Contains(r.Out, "SUCCEEDED") || !strings.Contains(r.Out, "build:SUCCEEDED,test:SUCCEEDED") {
		t.Fatalf("get events:\n%s", r.Out)
	}
	if r := clitest.Run(t, d.ClientConfig(), "event", "cancel", name); r.Error == nil || !strings.Contains(r.Error.Error(), "SUCCEEDED") {
		t.Fatalf("cancel of a succeeded event: %q %v, want a conflict naming its phase", r.Out, r.Error)
	}
}

func TestEventCreate_FanOutAndCancel(t *testing.T) {
	d, c := clitest.StartDaemon(t, daemon.Options{}) // no controllers: events stay PENDING
	for _, p := range []string{"a", "b"} {
		_, err := client.For[*api.Project](c).Create(context.Background(), &api.Project{ObjectMeta: api.ObjectMeta{Name: p, Namespace: "default"},
			Spec: api.ProjectSpec{WorkerTemplate: api.WorkerSpec{Command: []string{"true"}},
				EventSubscriptions: []api.EventSubscription{{Source: "github", Types: []string{"push"}}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	r := clitest.Run(t, d.ClientConfig(), "event", "create", "--source", "github", "--type", "push")
	lines := strings.Split(strings.TrimSpace(r.Out), "\n")
	if r.Error != nil || len(lines) != 2 || !strings.HasPrefix(lines[0], "event/a-") || !strings.HasPrefix(lines[1], "event/b-") {
		t.Fatalf("fan-out: %q %v, want one event per subscribed project", r.Out, r.Error)
	}
	if r := clitest.Run(t, d.ClientConfig(), "event", "create", "--source", "nobody", "--type", "x"); r.Error != nil || r.Out != "no project is subscribed to this event\n" {
		t.Fatalf("fan-out to nobody: %q %v", r.Out, r.Error)
	}
	if r := clitest.Run(t, d.ClientConfig(), "event", "create", "--project", "ghost", "--source", "s", "--type", "x"); r.Error == nil || !strings.Contains(r.Error.Error(), `project "ghost" not found in namespace "default"`) {
		t.Fatalf("event for a missing project: %q %v", r.Out, r.Error)
	}
	name := strings.TrimSuffix(strings.TrimPrefix(lines[0], "event/"), " created")
	if r := clitest.Run(t, d.ClientConfig(), "event", "list", "--project", "a", "--phase", "PENDING", "-o", "name"); r.Error != nil || r.Out != "event/"+name+"\n" {
		t.Fatalf("event list --project a: %q %v", r.Out, r.Error)
	}
	if r := clitest.Run(t, d.ClientConfig(), "event", "cancel", name); r.Error != nil || r.Out != "event/"+name+" canceled\n" {
		t.Fatalf("cancel: %q %v", r.Out, r.Error)
	}
}

package kubernetes_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/daemon"
	corev1 "k8s.io/api/core/v1"
)

// playWorker plays a worker pod of d's server as a real worker would: with
// the unit's own token it creates jobs (job name → image
// example.com/NAME:1) on its event, then polls the event until every job
// has reached want, and ends 0. It ends 1 (and fails t for an API error)
// when a job cannot be created or ctx ends first.
func (e *env) playWorker(ctx context.Context, t *testing.T, d *daemon.Daemon, pod *corev1.Pod, want api.EventPhase, jobs ...string) int32 {
	cfg := d.ClientConfig()
	cfg.Token = unitEnv(ctx, e.cs, pod, "CAIRN_TOKEN")
	wc, err := client.NewHTTP(cfg)
	if err != nil {
		t.Error(err)
		return 1
	}
	event := unitEnv(ctx, e.cs, pod, "CAIRN_EVENT")
	for _, job := range jobs {
		body, _ := json.Marshal(map[string]any{"name": job, "spec": api.WorkerSpec{Command: []string{"/bin/sh", "-c", "true"}, Image: "example.com/" + job + ":1"}})
		if _, err := wc.Action(ctx, client.ActionRequest{Kind: api.KindEvent, Namespace: "default", Name: event, Action: "jobs", Body: body}); err != nil {
			t.Errorf("create job %s: %v", job, err)
			return 1
		}
	}
	for ctx.Err() == nil {
		ev, err := client.For[*api.Event](wc).Get(ctx, "default", event)
		if err == nil && allJobsIn(ev.Status.Jobs, len(jobs), want) {
			return 0
		}
		time.Sleep(50 * time.Millisecond) // a worker polls its event
	}
	return 1
}

// allJobsIn reports whether jobs are n jobs, each in phase want.
func allJobsIn(jobs []api.JobStatus, n int, want api.EventPhase) bool {
	if len(jobs) != n {
		return false
	}
	for _, j := range jobs {
		if j.Phase != want {
			return false
		}
	}
	return true
}

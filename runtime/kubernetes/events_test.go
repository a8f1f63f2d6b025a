package kubernetes_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controllers"
	"cairn.dev/cairn/daemon"
	"cairn.dev/cairn/internal/testkit"
	rtkube "cairn.dev/cairn/runtime/kubernetes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// unitEnv reads a unit's environment variable from its Secret, as the
// kubelet would put it in the container.
func unitEnv(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, name string) string {
	for _, v := range pod.Spec.Containers[0].Env {
		if v.Name == name && v.ValueFrom != nil && v.ValueFrom.SecretKeyRef != nil {
			sec, err := cs.CoreV1().Secrets(pod.Namespace).Get(ctx, v.ValueFrom.SecretKeyRef.Name, metav1.GetOptions{})
			if err == nil {
				return string(sec.Data[v.ValueFrom.SecretKeyRef.Key])
			}
		}
	}
	return ""
}

func TestEvents_AWorkerPodCreatesTwoJobPodsAndSucceeds(t *testing.T) {
	e := newEnv(t)
	d, c := clitest.StartDaemon(t, daemon.Options{Runtime: e.rt,
		Controllers: controllers.List(controllers.Config{EventGracePeriod: time.Nanosecond})})
	if _, err := client.For[*api.Project](c).Create(e.ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: "shop", Namespace: "default"},
		Spec: api.ProjectSpec{WorkerTemplate: api.WorkerSpec{Command: []string{"/bin/sh", "-c", "true"}, Image: "example.com/worker:1"}}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	images := map[string]string{}
	// The worker pod, played by the test, creates two jobs with its own
	// token and ends once they have succeeded.
	e.k.Play(e.ctx, ns, func(ctx context.Context, pod *corev1.Pod) int32 {
		mu.Lock()
		images[pod.Name] = pod.Spec.Containers[0].Image
		mu.Unlock()
		if unitEnv(ctx, e.cs, pod, "CAIRN_JOB") != "" {
			return 0
		}
		cfg := d.ClientConfig()
		cfg.Token = unitEnv(ctx, e.cs, pod, "CAIRN_TOKEN")
		wc, err := client.NewHTTP(cfg)
		if err != nil {
			t.Error(err)
			return 1
		}
		event := unitEnv(ctx, e.cs, pod, "CAIRN_EVENT")
		for _, job := range []string{"build", "test"} {
			body, _ := json.Marshal(map[string]any{"name": job, "spec": api.WorkerSpec{Command: []string{"/bin/sh", "-c", "true"}, Image: "example.com/" + job + ":1"}})
			if _, err := wc.Action(ctx, client.ActionRequest{Kind: api.KindEvent, Namespace: "default", Name: event, Action: "jobs", Body: body}); err != nil {
				t.Errorf("create job %s: %v", job, err)
				return 1
			}
		}
		for ctx.Err() == nil {
			ev, err := client.For[*api.Event](wc).Get(ctx, "default", event)
			if err == nil && len(ev.Status.Jobs) == 2 && ev.Status.Jobs[0].Phase == api.PhaseSucceeded && ev.Status.Jobs[1].Phase == api.PhaseSucceeded {
				return 0
			}
			time.Sleep(50 * time.Millisecond)
		}
		return 1
	})
	spec, _ := json.Marshal(api.EventSpec{Project: "shop", Source: "git", Type: "push"})
	obj, err := c.Create(e.ctx, &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindEvent},
		ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "push-1"}, Fields: map[string]json.RawMessage{"spec": spec}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 2*time.Minute, "the worker and both jobs to succeed", func() bool {
		ev, err := client.For[*api.Event](c).Get(e.ctx, "default", "push-1")
		return err == nil && ev.Status.Worker.Phase == api.PhaseSucceeded && len(ev.Status.Jobs) == 2 &&
			ev.Status.Jobs[0].Phase == api.PhaseSucceeded && ev.Status.Jobs[1].Phase == api.PhaseSucceeded
	})
	testkit.Eventually(t, time.Minute, "the pods to be cleaned up", func() bool {
		l, err := e.cs.CoreV1().Pods(ns).List(e.ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0
	})
	mu.Lock()
	defer mu.Unlock()
	if images[rtkube.Name(api.JobUnitID(obj.UID, "build"))] != "example.com/build:1" || images[rtkube.Name(api.WorkerUnitID(obj.UID))] != "example.com/worker:1" {
		t.Errorf("images %v", images)
	}
}

package kubernetes_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
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
	d, c := cairnOn(t, e, e.rt, "", api.WorkerSpec{})
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
		return e.playWorker(ctx, t, d, pod, api.PhaseSucceeded, "build", "test")
	})
	uid := createEvent(t, e, c, "push-1")
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
	if images[rtkube.Name(api.JobUnitID(uid, "build"))] != "example.com/build:1" || images[rtkube.Name(api.WorkerUnitID(uid))] != "example.com/worker:1" {
		t.Errorf("images %v", images)
	}
}

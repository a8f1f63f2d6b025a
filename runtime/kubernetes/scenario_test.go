package kubernetes_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// cairnOn starts a cairn server in dataDir whose controllers run units on
// rt, with project "shop" (worker image example.com/worker:1, spec tpl).
func cairnOn(t *testing.T, e *env, rt *rtkube.Runtime, dataDir string, tpl api.WorkerSpec) (*daemon.Daemon, client.Interface) {
	t.Helper()
	d, c := clitest.StartDaemon(t, daemon.Options{Runtime: rt, DataDir: dataDir,
		Controllers: controllers.List(controllers.Config{EventGracePeriod: time.Nanosecond})})
	tpl.Command, tpl.Image = []string{"/bin/sh", "-c", "true"}, "example.com/worker:1"
	_, err := client.For[*api.Project](c).Create(e.ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: "shop", Namespace: "default"},
		Spec: api.ProjectSpec{WorkerTemplate: tpl}})
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	return d, c
}

func createEvent(t *testing.T, e *env, c client.Interface, name string) string {
	t.Helper()
	spec, _ := json.Marshal(api.EventSpec{Project: "shop", Source: "git", Type: "push"})
	obj, err := c.Create(e.ctx, &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindEvent},
		ObjectMeta: api.ObjectMeta{Namespace: "default", Name: name}, Fields: map[string]json.RawMessage{"spec": spec}})
	if err != nil {
		t.Fatal(err)
	}
	return obj.UID
}

func waitEvent(t *testing.T, e *env, c client.Interface, name, what string, ok func(*api.Event) bool) *api.Event {
	t.Helper()
	var ev *api.Event
	testkit.Eventually(t, 2*time.Minute, what, func() bool {
		var err error
		ev, err = client.For[*api.Event](c).Get(e.ctx, "default", name)
		return err == nil && ok(ev)
	})
	return ev
}

// untilGone blocks until the pod is deleted (the runtime killed it) or
// ctx ends, and returns 0.
func (e *env) untilGone(ctx context.Context, pod *corev1.Pod) int32 {
	for ctx.Err() == nil {
		p, err := e.cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && p.UID != pod.UID) {
			return 0
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0
}

func TestEvents_AJobFailsWithItsCodeAndTheWorkerLogOutlivesItsPod(t *testing.T) {
	e := newEnv(t)
	d, c := cairnOn(t, e, e.rt, "", api.WorkerSpec{})
	e.k.Play(e.ctx, ns, func(ctx context.Context, pod *corev1.Pod) int32 {
		if unitEnv(ctx, e.cs, pod, "CAIRN_JOB") != "" {
			return 3
		}
		e.k.SetLog(ns, pod.Name, "worker says hello\n")
		return e.playWorker(ctx, t, d, pod, api.PhaseFailed, "build")
	})
	createEvent(t, e, c, "push-1")
	ev := waitEvent(t, e, c, "push-1", "the worker to succeed", func(ev *api.Event) bool { return ev.Status.Worker.Phase == api.PhaseSucceeded })
	if j := ev.Status.Jobs[0]; j.ExitCode == nil || *j.ExitCode != 3 {
		t.Errorf("job %+v: want exit code 3", j)
	}
	testkit.Eventually(t, time.Minute, "the pods to be cleaned up", func() bool {
		l, err := e.cs.CoreV1().Pods(ns).List(e.ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0
	})
	out, err := c.Action(e.ctx, client.ActionRequest{Method: "GET", Kind: api.KindEvent, Namespace: "default", Name: "push-1", Action: "logs"})
	if err != nil || string(out) != "worker says hello\n" {
		t.Errorf("logs after the pod is gone = %q, %v", out, err)
	}
}

func TestEvents_CancelAndTimeoutDeleteTheRunningPod(t *testing.T) {
	e := newEnv(t)
	_, c := cairnOn(t, e, e.rt, "", api.WorkerSpec{})
	e.k.Play(e.ctx, ns, func(ctx context.Context, pod *corev1.Pod) int32 { return e.untilGone(ctx, pod) })

	uid := createEvent(t, e, c, "cancel-me")
	waitEvent(t, e, c, "cancel-me", "the worker to run", func(ev *api.Event) bool { return ev.Status.Worker.Phase == api.PhaseRunning })
	if _, err := c.Action(e.ctx, client.ActionRequest{Kind: api.KindEvent, Namespace: "default", Name: "cancel-me", Action: "cancel"}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, e, c, "cancel-me", "the event to be aborted", func(ev *api.Event) bool { return ev.Status.Worker.Phase == api.PhaseAborted })
	e.podGone(t, api.WorkerUnitID(uid))

	timeout := api.WorkerSpec{Command: []string{"/bin/sh", "-c", "true"}, Image: "example.com/worker:1", Timeout: &api.Duration{Duration: 2 * time.Second}}
	if _, err := client.For[*api.Project](c).Create(e.ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: "slow", Namespace: "default"},
		Spec: api.ProjectSpec{WorkerTemplate: timeout}}); err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(api.EventSpec{Project: "slow", Source: "git", Type: "push"})
	obj, err := c.Create(e.ctx, &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindEvent},
		ObjectMeta: api.ObjectMeta{Namespace: "default", Name: "too-slow"}, Fields: map[string]json.RawMessage{"spec": spec}})
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, e, c, "too-slow", "the worker to time out", func(ev *api.Event) bool { return ev.Status.Worker.Phase == api.PhaseTimedOut })
	e.podGone(t, api.WorkerUnitID(obj.UID))
}

func TestEvents_ARestartOfCairnWhilePodsRunStartsNoSecondPod(t *testing.T) {
	e := newEnv(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	d, c := cairnOn(t, e, e.rt, dataDir, api.WorkerSpec{})
	release := make(chan struct{})
	var mu sync.Mutex
	created := map[string]int{}
	e.k.Play(e.ctx, ns, func(ctx context.Context, pod *corev1.Pod) int32 {
		mu.Lock()
		created[pod.Name]++
		mu.Unlock()
		select {
		case <-release:
		case <-ctx.Done():
		}
		return 0
	})
	uid := createEvent(t, e, c, "push-1")
	waitEvent(t, e, c, "push-1", "the worker to run", func(ev *api.Event) bool { return ev.Status.Worker.Phase == api.PhaseRunning })
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	// cairn is down; the pod runs on, and ends.
	close(release)
	testkit.Eventually(t, time.Minute, "the pod to end", func() bool {
		p, err := e.cs.CoreV1().Pods(ns).Get(e.ctx, rtkube.Name(api.WorkerUnitID(uid)), metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodSucceeded
	})
	_, c = cairnOn(t, e, e.open(t, e.kc), dataDir, api.WorkerSpec{})
	waitEvent(t, e, c, "push-1", "the worker to succeed", func(ev *api.Event) bool { return ev.Status.Worker.Phase == api.PhaseSucceeded })
	mu.Lock()
	defer mu.Unlock()
	if n := created[rtkube.Name(api.WorkerUnitID(uid))]; n != 1 {
		t.Errorf("%d pods were started for the worker, want 1", n)
	}
}

func TestEvents_AWorkerSharesItsWorkspaceClaimWithItsJobsAndItGoesWithTheWorker(t *testing.T) {
	e := newEnv(t)
	d, c := cairnOn(t, e, e.rt, "", api.WorkerSpec{SharedWorkspace: &api.SharedWorkspace{Size: "1Gi"}})
	var mu sync.Mutex
	claims := map[string]string{} // pod -> claim
	e.k.Play(e.ctx, ns, func(ctx context.Context, pod *corev1.Pod) int32 {
		for _, v := range pod.Spec.Volumes {
			if v.Name == "workspace" && v.PersistentVolumeClaim != nil {
				mu.Lock()
				claims[pod.Name] = v.PersistentVolumeClaim.ClaimName
				mu.Unlock()
			}
		}
		if unitEnv(ctx, e.cs, pod, "CAIRN_JOB") != "" {
			return 0
		}
		return e.playWorker(ctx, t, d, pod, api.PhaseSucceeded, "build")
	})
	uid := createEvent(t, e, c, "push-1")
	claim := rtkube.Name("ws-" + uid)
	waitEvent(t, e, c, "push-1", "the worker to succeed", func(ev *api.Event) bool { return ev.Status.Worker.Phase == api.PhaseSucceeded })
	mu.Lock()
	worker, job := claims[rtkube.Name(api.WorkerUnitID(uid))], claims[rtkube.Name(api.JobUnitID(uid, "build"))]
	mu.Unlock()
	if worker != claim || job != claim {
		t.Errorf("workspace claims: worker %q, job %q; want both %q", worker, job, claim)
	}
	testkit.Eventually(t, time.Minute, "the claim to be deleted", func() bool {
		pvc, err := e.cs.CoreV1().PersistentVolumeClaims(ns).Get(e.ctx, claim, metav1.GetOptions{})
		// Without a kube-controller-manager the pvc-protection finalizer
		// stays: deleted means marked for deletion.
		return apierrors.IsNotFound(err) || (err == nil && pvc.DeletionTimestamp != nil)
	})
}

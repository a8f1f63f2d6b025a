package kubernetes_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer/container"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/runtime"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// containerSpec is a container deploy item's unit as the container
// deployer builds it: its imports file names the image.
func containerSpec(id string) runtime.Spec {
	return runtime.Spec{ID: id, Argv: []string{"/bin/sh", "-c", `echo '{"url":"http://web"}' > "$CAIRN_WORKSPACE/exports.json"`},
		Env:          []string{"CAIRN_NAMESPACE=team", "CAIRN_DEPLOYITEM=web", "PATH=/usr/bin:/bin"},
		WorkspaceEnv: "CAIRN_WORKSPACE",
		Files:        map[string][]byte{"imports.json": []byte(`{"name":"web","config":{"image":"example.com/deploy:1"}}`)}}
}

// exit ends pod's container with code 0 and the termination message msg,
// as a kubelet does with the file at its terminationMessagePath.
func (e *env) exit(t *testing.T, pod *corev1.Pod, msg string) {
	t.Helper()
	if err := e.k.Run(e.ctx, pod); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	if err := e.k.SetStatus(e.ctx, pod, corev1.PodSucceeded, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 0, Reason: "Completed", Message: msg, StartedAt: now, FinishedAt: now}}); err != nil {
		t.Fatal(err)
	}
}

func TestRuntime_AContainerDeployItemsExportsComeBackAsItsTerminationMessage(t *testing.T) {
	e := newEnv(t)

	t.Run("the exports file is the termination message, read before and after the pod goes", func(t *testing.T) {
		spec := containerSpec("di-exports")
		if _, err := e.rt.Start(e.ctx, spec); err != nil {
			t.Fatal(err)
		}
		pod := e.podOf(t, spec.ID)
		if p := pod.Spec.Containers[0].TerminationMessagePath; p != "/workspace/exports.json" {
			t.Fatalf("terminationMessagePath %q, want the exports file /workspace/exports.json", p)
		}
		if _, err := e.rt.ReadFile(e.ctx, spec.ID, "exports.json"); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("ReadFile of a running unit = %v, want ErrNotFound", err)
		}
		e.exit(t, pod, `{"url":"http://web"}`)
		waitState(t, e.ctx, e.rt, spec.ID, func(s runtime.State) bool { return s.Phase == runtime.PhaseExited })
		if b, err := e.rt.ReadFile(e.ctx, spec.ID, "exports.json"); err != nil || string(b) != `{"url":"http://web"}` {
			t.Fatalf("ReadFile of the ended unit = %q, %v", b, err)
		}
		if err := e.rt.Cleanup(e.ctx, spec.ID); err != nil {
			t.Fatal(err)
		}
		e.podGone(t, spec.ID)
		if b, err := e.rt.ReadFile(e.ctx, spec.ID, "./exports.json"); err != nil || string(b) != `{"url":"http://web"}` {
			t.Fatalf("ReadFile once the pod is gone = %q, %v: want the exports kept in the unit's Secret", b, err)
		}
		if _, err := e.rt.ReadFile(e.ctx, spec.ID, "imports.json"); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("ReadFile of another file = %v, want ErrNotFound", err)
		}
	})

	t.Run("exports that reach the 4 KiB Kubernetes keeps are refused, not cut", func(t *testing.T) {
		spec := containerSpec("di-big")
		if _, err := e.rt.Start(e.ctx, spec); err != nil {
			t.Fatal(err)
		}
		e.exit(t, e.podOf(t, spec.ID), `{"k":"`+strings.Repeat("x", 4090)+`"}`)
		waitState(t, e.ctx, e.rt, spec.ID, func(s runtime.State) bool { return s.Phase == runtime.PhaseExited })
		if _, err := e.rt.ReadFile(e.ctx, spec.ID, "exports.json"); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "4 KiB") {
			t.Fatalf("ReadFile = %v, want ErrInvalid naming the 4 KiB bound", err)
		}
	})

	t.Run("a worker's pod keeps the default termination message path", func(t *testing.T) {
		spec := workerSpec(t, "uid-noexports", "example.com/w:1")
		if _, err := e.rt.Start(e.ctx, spec); err != nil {
			t.Fatal(err)
		}
		if p := e.podOf(t, spec.ID).Spec.Containers[0].TerminationMessagePath; p != corev1.TerminationMessagePathDefault {
			t.Fatalf("terminationMessagePath %q, want the default", p)
		}
		if _, err := e.rt.ReadFile(e.ctx, spec.ID, "exports.json"); !errors.Is(err, runtime.ErrNotFound) {
			t.Fatalf("ReadFile of a worker = %v, want ErrNotFound", err)
		}
	})
}

// TestRuntime_AContainerDeployItemSucceedsWithTheExportsItsPodLeft: the
// container deployer, unchanged, runs an item on this runtime; the test,
// playing the kubelet, ends its pod with the exports file as the
// termination message; the item succeeds with those exports.
func TestRuntime_AContainerDeployItemSucceedsWithTheExportsItsPodLeft(t *testing.T) {
	e := newEnv(t)
	d := deploytest.Start(t, deploytest.Options{Runtime: e.rt},
		manager.Controller{Name: "deployer-container", Setup: container.Setup})
	d.Create(deploytest.Object(api.KindDeployItem, "web", &api.DeployItem{Spec: api.DeployItemSpec{Type: container.Type,
		Config: json.RawMessage(`{"image":"example.com/deploy:1","command":["/bin/sh","-c","echo '{\"url\":\"http://web\"}' > \"$CAIRN_EXPORTS\""]}`)}}))
	var pod *corev1.Pod
	for pod == nil {
		l, err := e.cs.CoreV1().Pods(ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) > 0 {
			pod = &l.Items[0]
			break
		}
		select {
		case <-e.ctx.Done():
			t.Fatal("no pod for the deploy item")
		case <-time.After(20 * time.Millisecond):
		}
	}
	e.exit(t, pod, `{"url":"http://web"}`)
	item := d.WaitItem("web", "succeeded", func(x api.DeployItem) bool { return x.Status.Phase == api.DeploySucceeded })
	if got := d.Data(item.Status.ExportRef); got["url"] != "http://web" {
		t.Fatalf("exports %v: want url http://web, from the pod's termination message", got)
	}
}

package kubernetes

import (
	"strings"
	"testing"

	"cairn.dev/cairn/runtime"
	corev1 "k8s.io/api/core/v1"
)

func TestPodState(t *testing.T) {
	pod := func(phase corev1.PodPhase, st corev1.ContainerState, reason string) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: containerName, Image: "img:1"}}}}
		p.Status.Phase, p.Status.Reason = phase, reason
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: containerName, State: st}}
		return p
	}
	term := func(code int32, reason string) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}
	}
	unsched := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes: Insufficient cpu"}}}}
	cases := []struct {
		name   string
		pod    *corev1.Pod
		phase  runtime.Phase
		code   int
		reason string
	}{
		{"gone", nil, runtime.PhaseLost, 0, "deleted"},
		{"unschedulable", unsched, runtime.PhasePending, 0, "unschedulable: 0/3 nodes: Insufficient cpu"},
		{"image pull", pod(corev1.PodPending, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}, ""), runtime.PhaseFailed, 0, `image "img:1": ImagePullBackOff`},
		{"creating", pod(corev1.PodPending, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}, ""), runtime.PhasePending, 0, ""},
		{"running", pod(corev1.PodRunning, corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, ""), runtime.PhaseRunning, 0, ""},
		{"succeeded", pod(corev1.PodSucceeded, term(0, "Completed"), ""), runtime.PhaseExited, 0, ""},
		{"failed", pod(corev1.PodFailed, term(2, "Error"), ""), runtime.PhaseExited, 2, ""},
		{"oom", pod(corev1.PodFailed, term(137, "OOMKilled"), ""), runtime.PhaseExited, 137, "OOMKilled"},
		{"signal", pod(corev1.PodFailed, term(143, "Error"), ""), runtime.PhaseExited, 143, "killed by signal 15"},
		{"evicted while running", pod(corev1.PodFailed, term(137, "Error"), "Evicted"), runtime.PhaseExited, 137, "Evicted"},
		{"evicted before running", pod(corev1.PodFailed, corev1.ContainerState{}, "Evicted"), runtime.PhaseLost, 0, "Evicted"},
	}
	for _, c := range cases {
		got := podState(c.pod)
		if got.Phase != c.phase || got.ExitCode != c.code || !strings.Contains(got.Reason, c.reason) || (c.reason == "" && got.Reason != "") {
			t.Errorf("%s: %+v; want %s %d %q", c.name, got, c.phase, c.code, c.reason)
		}
	}
}

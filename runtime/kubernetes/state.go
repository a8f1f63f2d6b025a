package kubernetes

import (
	"fmt"
	"strconv"
	"time"

	"cairn.dev/cairn/runtime"
	corev1 "k8s.io/api/core/v1"
)

// recordAnnotations are the annotations that record st as a unit's final
// state on its Secret.
func recordAnnotations(st runtime.State) map[string]string {
	a := map[string]string{AnnotationPhase: string(st.Phase), AnnotationExitCode: strconv.Itoa(st.ExitCode)}
	if st.Reason != "" {
		a[AnnotationReason] = st.Reason
	}
	if !st.Started.IsZero() {
		a[AnnotationStarted] = st.Started.UTC().Format(time.RFC3339Nano)
	}
	if !st.Ended.IsZero() {
		a[AnnotationEnded] = st.Ended.UTC().Format(time.RFC3339Nano)
	}
	return a
}

// recorded returns the final state recorded on a unit's Secret, and
// whether there is one.
func recorded(sec *corev1.Secret) (runtime.State, bool) {
	a := sec.Annotations
	p, ok := a[AnnotationPhase]
	if !ok {
		return runtime.State{}, false
	}
	st := runtime.State{Phase: runtime.Phase(p), Reason: a[AnnotationReason]}
	st.ExitCode, _ = strconv.Atoi(a[AnnotationExitCode])
	st.Started, _ = time.Parse(time.RFC3339Nano, a[AnnotationStarted])
	st.Ended, _ = time.Parse(time.RFC3339Nano, a[AnnotationEnded])
	return st, true
}

// Waiting reasons of a container that will not start without a change:
// the unit fails with them.
var fatalWaiting = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// podState returns a unit's state as its pod shows it (pod nil: the pod
// is gone, and the unit is Lost). Pending carries a reason when the pod
// cannot be scheduled; an image that cannot be pulled fails the unit; an
// ended container gives Exited with its code, and its reason when it is
// not the usual one (OOMKilled, Evicted, a signal).
func podState(pod *corev1.Pod) runtime.State {
	if pod == nil {
		return runtime.State{Phase: runtime.PhaseLost, Reason: "the unit's pod was deleted before cairn saw it end"}
	}
	st := runtime.State{Phase: runtime.PhasePending, Started: pod.CreationTimestamp.Time}
	var cs *corev1.ContainerStatus
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == containerName {
			cs = &pod.Status.ContainerStatuses[i]
		}
	}
	if cs != nil && cs.State.Terminated != nil {
		t := cs.State.Terminated
		st.Phase, st.ExitCode, st.Ended = runtime.PhaseExited, int(t.ExitCode), t.FinishedAt.Time
		if !t.StartedAt.IsZero() {
			st.Started = t.StartedAt.Time
		}
		st.Reason = exitReason(t, pod)
		return st
	}
	if cs != nil && cs.State.Waiting != nil && fatalWaiting[cs.State.Waiting.Reason] {
		img := cs.Image
		if img == "" && len(pod.Spec.Containers) > 0 {
			img = pod.Spec.Containers[0].Image
		}
		st.Phase = runtime.PhaseFailed
		st.Reason = fmt.Sprintf("image %q: %s: %s", img, cs.State.Waiting.Reason, cs.State.Waiting.Message)
		return st
	}
	switch pod.Status.Phase {
	case corev1.PodRunning:
		st.Phase = runtime.PhaseRunning
		if cs != nil && cs.State.Running != nil {
			st.Started = cs.State.Running.StartedAt.Time
		}
	case corev1.PodSucceeded, corev1.PodFailed:
		// Ended without a container status: evicted or rejected by the
		// node before the container ran.
		st.Phase = runtime.PhaseLost
		st.Reason = fmt.Sprintf("the pod ended without an exit code: %s", podReason(pod))
	default:
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				st.Reason = "unschedulable: " + c.Message
			}
		}
	}
	return st
}

// exitReason explains an ended container's code when it is not the usual
// Completed or Error: OOMKilled, an eviction, a signal.
func exitReason(t *corev1.ContainerStateTerminated, pod *corev1.Pod) string {
	r := ""
	if t.Reason != "" && t.Reason != "Completed" && t.Reason != "Error" {
		r = t.Reason
		if t.Message != "" {
			r += ": " + t.Message
		}
	}
	if pod.Status.Reason != "" {
		if r != "" {
			r += "; "
		}
		r += podReason(pod)
	}
	if r == "" && t.ExitCode > 128 && t.ExitCode < 160 {
		r = fmt.Sprintf("killed by signal %d", t.ExitCode-128)
	}
	return r
}

func podReason(pod *corev1.Pod) string {
	r := pod.Status.Reason
	if r == "" {
		r = string(pod.Status.Phase)
	}
	if pod.Status.Message != "" {
		r += ": " + pod.Status.Message
	}
	return r
}

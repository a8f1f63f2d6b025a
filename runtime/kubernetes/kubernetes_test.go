package kubernetes_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"cairn.dev/cairn/runtime"
	rtkube "cairn.dev/cairn/runtime/kubernetes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func logs(t *testing.T, e *env, id string, follow bool) string {
	t.Helper()
	rc, err := e.rt.Logs(e.ctx, id, runtime.LogOptions{Follow: follow})
	if err != nil {
		t.Fatalf("logs: %v", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read logs: %v", err)
	}
	return string(b)
}

func TestRuntime_UnitRunsAsALockedDownPodAndEndsWithItsCodeAndLog(t *testing.T) {
	e := newEnv(t)
	spec := workerSpec(t, "uid-1", "example.com/worker:1")
	st, err := e.rt.Start(e.ctx, spec)
	if err != nil || st.Phase != runtime.PhasePending {
		t.Fatalf("Start = %+v, %v", st, err)
	}
	pod := e.podOf(t, spec.ID)
	c := pod.Spec.Containers[0]
	sc, psc := c.SecurityContext, pod.Spec.SecurityContext
	switch {
	case pod.Labels[rtkube.LabelUnit] != spec.ID || pod.Labels[rtkube.LabelOwnerKind] != "Event" || pod.Labels[rtkube.LabelOwner] != "team.push-1":
		t.Errorf("labels %v", pod.Labels)
	case c.Image != "example.com/worker:1" || strings.Join(c.Command, " ") != "/bin/sh -c echo hi" || c.WorkingDir != "/workspace/src":
		t.Errorf("container %s %v in %s", c.Image, c.Command, c.WorkingDir)
	case psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0:
		t.Errorf("pod security context %+v", psc)
	case sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL":
		t.Errorf("container security context %+v", sc)
	case pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken:
		t.Error("the service account token is mounted")
	case c.Resources.Requests.Cpu().String() != "250m" || c.Resources.Requests.Memory().String() != "128Mi":
		t.Errorf("requests %v: want the project's cpu and the default memory", c.Resources.Requests)
	case pod.Spec.RestartPolicy != corev1.RestartPolicyNever:
		t.Errorf("restart policy %s", pod.Spec.RestartPolicy)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if m, ok := mounts["/workspace/.cairn/event.json"]; !ok || !m.ReadOnly || m.SubPath == "" {
		t.Errorf("the event file is not mounted read-only: %+v", c.VolumeMounts)
	}
	raw, _ := pod.Marshal()
	if strings.Contains(string(raw), "s3cret") {
		t.Error("the pod's spec holds a secret value")
	}
	var ws string
	for _, v := range c.Env {
		if v.Name == "CAIRN_WORKSPACE" {
			ws = v.Value
		}
	}
	if ws != "/workspace" {
		t.Errorf("CAIRN_WORKSPACE = %q", ws)
	}

	if err := e.k.Run(e.ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitState(t, e.ctx, e.rt, spec.ID, func(s runtime.State) bool { return s.Phase == runtime.PhaseRunning })
	e.k.SetLog(ns, pod.Name, "building\nfailed at step 3\n")
	if got := logs(t, e, spec.ID, false); got != "building\nfailed at step 3\n" {
		t.Errorf("Logs while running = %q", got)
	}
	if err := e.k.Exit(e.ctx, pod, 3, ""); err != nil {
		t.Fatal(err)
	}
	st, err = e.rt.Wait(e.ctx, spec.ID)
	if err != nil || st.Phase != runtime.PhaseExited || st.ExitCode != 3 {
		t.Fatalf("Wait = %+v, %v; want Exited 3", st, err)
	}
	if err := e.rt.Cleanup(e.ctx, spec.ID); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	e.podGone(t, spec.ID)
	e.k.SetLog(ns, pod.Name, "") // the node forgets it, too
	if got := logs(t, e, spec.ID, true); got != "building\nfailed at step 3\n" {
		t.Errorf("Logs after the pod is gone = %q", got)
	}
	sec, err := e.cs.CoreV1().Secrets(ns).Get(e.ctx, rtkube.Name(spec.ID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range sec.Data {
		if strings.Contains(string(v), "s3cret") {
			t.Errorf("the ended unit's secret still holds %s", k)
		}
	}
	if st, err := e.rt.State(e.ctx, spec.ID); err != nil || st.ExitCode != 3 {
		t.Errorf("State after Cleanup = %+v, %v", st, err)
	}
	if _, err := e.rt.Start(e.ctx, spec); !errors.Is(err, runtime.ErrExists) {
		t.Errorf("Start again = %v, want ErrExists", err)
	}
	if err := e.rt.Remove(e.ctx, spec.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.State(e.ctx, spec.ID); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("State after Remove = %v", err)
	}
}

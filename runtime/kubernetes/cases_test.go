package kubernetes_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/runtime"
	rtkube "cairn.dev/cairn/runtime/kubernetes"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRuntime_EndsAndFailures(t *testing.T) {
	e := newEnv(t)

	t.Run("an image that cannot be pulled fails the unit with the reason", func(t *testing.T) {
		spec := workerSpec(t, "uid-pull", "example.com/nope:1")
		if _, err := e.rt.Start(e.ctx, spec); err != nil {
			t.Fatal(err)
		}
		pod := e.podOf(t, spec.ID)
		if err := e.k.Bind(e.ctx, pod); err != nil {
			t.Fatal(err)
		}
		if err := e.k.SetStatus(e.ctx, pod, corev1.PodPending, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ErrImagePull", Message: "manifest unknown"}}); err != nil {
			t.Fatal(err)
		}
		st, err := e.rt.Wait(e.ctx, spec.ID)
		if err != nil || st.Phase != runtime.PhaseFailed || !strings.Contains(st.Reason, "ErrImagePull") || !strings.Contains(st.Reason, "example.com/nope:1") {
			t.Fatalf("Wait = %+v, %v", st, err)
		}
	})

	t.Run("OOMKilled is the reason of the exit", func(t *testing.T) {
		spec := workerSpec(t, "uid-oom", "example.com/w:1")
		if _, err := e.rt.Start(e.ctx, spec); err != nil {
			t.Fatal(err)
		}
		pod := e.podOf(t, spec.ID)
		if err := e.k.Run(e.ctx, pod); err != nil {
			t.Fatal(err)
		}
		if err := e.k.Exit(e.ctx, pod, 137, "OOMKilled"); err != nil {
			t.Fatal(err)
		}
		st, err := e.rt.Wait(e.ctx, spec.ID)
		if err != nil || st.Phase != runtime.PhaseExited || st.ExitCode != 137 || !strings.Contains(st.Reason, "OOMKilled") {
			t.Fatalf("Wait = %+v, %v", st, err)
		}
	})

	t.Run("a unit without an image fails to start naming where to set one", func(t *testing.T) {
		spec := workerSpec(t, "uid-noimage", "")
		st, err := e.rt.Start(e.ctx, spec)
		if err != nil || st.Phase != runtime.PhaseFailed || !strings.Contains(st.Reason, "workerTemplate.image") {
			t.Fatalf("Start = %+v, %v", st, err)
		}
		if _, err := e.rt.Start(e.ctx, spec); !errors.Is(err, runtime.ErrExists) {
			t.Errorf("Start again = %v, want ErrExists", err)
		}
	})

	t.Run("kill deletes the running pod and records the unit killed", func(t *testing.T) {
		spec := workerSpec(t, "uid-kill", "example.com/w:1")
		if _, err := e.rt.Start(e.ctx, spec); err != nil {
			t.Fatal(err)
		}
		pod := e.podOf(t, spec.ID)
		if err := e.k.Run(e.ctx, pod); err != nil {
			t.Fatal(err)
		}
		e.k.SetLog(ns, pod.Name, "working\n")
		waitState(t, e.ctx, e.rt, spec.ID, func(s runtime.State) bool { return s.Phase == runtime.PhaseRunning })
		if err := e.rt.Kill(e.ctx, spec.ID); err != nil {
			t.Fatalf("Kill: %v", err)
		}
		e.podGone(t, spec.ID)
		st, err := e.rt.State(e.ctx, spec.ID)
		if err != nil || st.Phase != runtime.PhaseExited || st.ExitCode != 137 {
			t.Fatalf("State = %+v, %v", st, err)
		}
		if got := logs(t, e, spec.ID, false); got != "working\n" {
			t.Errorf("log of the killed unit = %q", got)
		}
	})

	t.Run("a pod deleted behind cairn's back is Lost", func(t *testing.T) {
		spec := workerSpec(t, "uid-lost", "example.com/w:1")
		if _, err := e.rt.Start(e.ctx, spec); err != nil {
			t.Fatal(err)
		}
		pod := e.podOf(t, spec.ID)
		if err := e.k.Run(e.ctx, pod); err != nil {
			t.Fatal(err)
		}
		zero := int64(0)
		if err := e.cs.CoreV1().Pods(ns).Delete(e.ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		st, err := e.rt.Wait(e.ctx, spec.ID)
		if err != nil || st.Phase != runtime.PhaseLost {
			t.Fatalf("Wait = %+v, %v", st, err)
		}
		if _, err := e.rt.Start(e.ctx, spec); !errors.Is(err, runtime.ErrExists) {
			t.Errorf("Start again = %v, want ErrExists", err)
		}
		if _, err := e.cs.CoreV1().Pods(ns).Get(e.ctx, pod.Name, metav1.GetOptions{}); err == nil {
			t.Error("a second pod was started")
		}
	})
}

func TestRuntime_ANewRuntimeFindsUnitsAgainAndStartsNothingTwice(t *testing.T) {
	e := newEnv(t)
	running, ended := workerSpec(t, "uid-r", "example.com/w:1"), workerSpec(t, "uid-e", "example.com/w:1")
	for _, s := range []runtime.Spec{running, ended} {
		if _, err := e.rt.Start(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := e.k.Run(e.ctx, e.podOf(t, s.ID)); err != nil {
			t.Fatal(err)
		}
	}
	first := e.podOf(t, running.ID)
	e.rt.Close()
	// While cairn is down, one unit ends.
	e.k.SetLog(ns, rtkube.Name(ended.ID), "done\n")
	if err := e.k.Exit(e.ctx, e.podOf(t, ended.ID), 4, ""); err != nil {
		t.Fatal(err)
	}

	rt := e.open(t, e.kc)
	if _, err := rt.Start(e.ctx, running); !errors.Is(err, runtime.ErrExists) {
		t.Fatalf("Start after the restart = %v, want ErrExists", err)
	}
	if p := e.podOf(t, running.ID); p.UID != first.UID {
		t.Error("a second pod was started")
	}
	units, err := rt.List(e.ctx)
	if err != nil || len(units) != 2 {
		t.Fatalf("List = %+v, %v", units, err)
	}
	got := map[string]runtime.State{}
	for _, u := range units {
		got[u.ID] = u.State
	}
	if got[running.ID].Phase != runtime.PhaseRunning || got[ended.ID].Phase != runtime.PhaseExited || got[ended.ID].ExitCode != 4 {
		t.Errorf("states after the restart: %+v", got)
	}
	e.rt = rt
	if l := logs(t, e, ended.ID, true); l != "done\n" {
		t.Errorf("log = %q", l)
	}
}

func TestRuntime_LeastPrivilege(t *testing.T) {
	e := newEnv(t) // acts with exactly PolicyRules: every test here relies on it
	for _, missing := range []string{"pods/log", "secrets"} {
		var rules []rbacv1.PolicyRule
		for _, r := range rtkube.PolicyRules() {
			if r.Resources[0] != missing {
				rules = append(rules, r)
			}
		}
		rt := openRuntime(t, e.c.ServiceAccountKubeconfig(ns, "less-"+strings.ReplaceAll(missing, "/", "-"), rules))
		for rt.Ready() == nil || !strings.Contains(rt.Ready().Error(), missing) {
			select {
			case <-e.ctx.Done():
				t.Fatalf("without %s: Ready = %v", missing, rt.Ready())
			case <-time.After(20 * time.Millisecond):
			}
		}
		if err := rt.Ready(); !errors.Is(err, rtkube.ErrNotReady) || !strings.Contains(err.Error(), rtkube.DefaultRole) {
			t.Errorf("without %s: Ready = %v", missing, err)
		}
	}
}

package kubetest_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"cairn.dev/cairn/internal/testkit/kubetest"
)

// endedPod waits until the pod's container has terminated and returns
// that state.
func endedPod(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns, name string) *corev1.ContainerStateTerminated {
	t.Helper()
	for {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil {
			return p.Status.ContainerStatuses[0].State.Terminated
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s did not end: %v", name, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestKubeletExec_RunsThePodsCommandWithItsSecretEnvAndMountsAndReportsItsEnd(t *testing.T) {
	c := kubetest.Start(t)
	ctx := ctx(t)
	cs := c.Clientset()
	const ns = "default"
	k := c.StartKubelet("node-1")
	k.Exec(ctx, ns)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "unit", Namespace: ns},
		Data: map[string][]byte{"token": []byte("s3cret"), "file": []byte("from the secret\n")}}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mode := int32(0o440)
	script := `set -eu
test "$TOKEN" = s3cret
test "$(cd "$WS/src" && pwd -P)" = "$(pwd -P)"
cat "$WS/in/file.txt"
echo scratch > "$WS/scratch" && cat "$WS/scratch"
printf '{"url":"http://web"}' > "$WS/exports.json"
echo to stderr >&2
exit 3`
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unit", Namespace: ns}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "unit", Image: "example.com/ignored:1",
			Command: []string{"sh", "-c", script}, WorkingDir: "/workspace/src",
			Env: []corev1.EnvVar{{Name: "PATH", Value: "/usr/bin:/bin"}, {Name: "WS", Value: "/workspace"},
				{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "unit"}, Key: "token"}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "files", MountPath: "/workspace/in/file.txt", SubPath: "file", ReadOnly: true},
				{Name: "workspace", MountPath: "/workspace"}},
			TerminationMessagePath: "/workspace/exports.json"}},
		Volumes: []corev1.Volume{{Name: "workspace", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "files", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "unit", DefaultMode: &mode}}}},
	}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	term := endedPod(t, ctx, cs, ns, "unit")
	if term.ExitCode != 3 || term.Reason != "Error" || term.Message != `{"url":"http://web"}` {
		t.Errorf("terminated %+v, want exit code 3, Error and the exports as its message", term)
	}
	p, err := cs.CoreV1().Pods(ns).Get(ctx, "unit", metav1.GetOptions{})
	if err != nil || p.Status.Phase != corev1.PodFailed || p.Spec.NodeName != "node-1" {
		t.Errorf("pod %s on %q, %v; want Failed on node-1", p.Status.Phase, p.Spec.NodeName, err)
	}
	rc, err := cs.CoreV1().Pods(ns).GetLogs("unit", &corev1.PodLogOptions{Container: "unit"}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	if got, want := string(b), "from the secret\nscratch\nto stderr\n"; got != want {
		t.Errorf("pods/log = %q, want %q", got, want)
	}
}

func TestKubeletExec_ADeletedPodsProcessIsStoppedAndItsLogFollowedToTheEnd(t *testing.T) {
	c := kubetest.Start(t)
	ctx := ctx(t)
	cs := c.Clientset()
	const ns = "default"
	k := c.StartKubelet("node-1")
	k.Exec(ctx, ns)
	grace := int64(5)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sleeper", Namespace: ns}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: &grace,
		Containers: []corev1.Container{{Name: "unit", Image: "example.com/ignored:1",
			Command: []string{"/bin/sh", "-c", `trap 'echo stopping; exit 0' TERM; echo started; while :; do sleep 0.1; done`}}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "sleeper", metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the pod is not Running: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	rc, err := cs.CoreV1().Pods(ns).GetLogs("sleeper", &corev1.PodLogOptions{Container: "unit", Follow: true}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "sleeper", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc) // ends when the process has
	if got := string(b); !strings.HasPrefix(got, "started\n") || !strings.HasSuffix(got, "stopping\n") {
		t.Errorf("the followed log = %q, want started ... stopping", got)
	}
	for {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, "sleeper", metav1.GetOptions{})
		if err != nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the deleted pod is still there")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

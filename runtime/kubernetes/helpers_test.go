package kubernetes_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit/kubetest"
	"cairn.dev/cairn/runtime"
	rtkube "cairn.dev/cairn/runtime/kubernetes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const ns = "units"

// env is a cluster with a kubelet and a runtime acting as a service
// account holding exactly the documented Role.
type env struct {
	c   *kubetest.Cluster
	k   *kubetest.Kubelet
	cs  *kubernetes.Clientset // admin
	kc  []byte                // the runtime's kubeconfig
	rt  *rtkube.Runtime
	ctx context.Context
}

func newEnv(t *testing.T) *env {
	t.Helper()
	c := kubetest.Start(t)
	e := &env{c: c, cs: c.Clientset(), ctx: testCtx(t)}
	e.k = c.StartKubelet("node-1")
	e.kc = c.ServiceAccountKubeconfig(ns, "cairn", rtkube.PolicyRules())
	e.rt = e.open(t, e.kc)
	return e
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// open returns a ready runtime acting with kubeconfig kc.
func (e *env) open(t *testing.T, kc []byte) *rtkube.Runtime {
	t.Helper()
	rt := openRuntime(t, kc)
	waitReady(t, e.ctx, rt)
	return rt
}

func openRuntime(t *testing.T, kc []byte) *rtkube.Runtime {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rtkube.New(rtkube.Options{Config: cfg, Namespace: ns, KillGrace: time.Second, RetryInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func waitReady(t *testing.T, ctx context.Context, rt *rtkube.Runtime) {
	t.Helper()
	for rt.Ready() != nil {
		select {
		case <-ctx.Done():
			t.Fatalf("runtime not ready: %v", rt.Ready())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// workerSpec is a worker unit's spec as the scheduler builds it: the
// event file names the image.
func workerSpec(t *testing.T, uid, image string) runtime.Spec {
	t.Helper()
	ev := api.Event{ObjectMeta: api.ObjectMeta{Namespace: "team", Name: "push-1", UID: uid},
		Spec: api.EventSpec{Worker: api.WorkerSpec{Image: image, Resources: &api.Resources{Requests: map[string]string{"cpu": "250m"}}}}}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.Spec{ID: api.WorkerUnitID(uid), Argv: []string{"/bin/sh", "-c", "echo hi"},
		Env: []string{"CAIRN_TOKEN=s3cret-token", "PATH=/usr/bin:/bin"}, WorkspaceEnv: "CAIRN_WORKSPACE",
		Files: map[string][]byte{".cairn/event.json": raw, ".cairn/secrets/key": []byte("s3cret-file")}, Dir: "src"}
}

// podOf waits until the unit's pod exists and returns it.
func (e *env) podOf(t *testing.T, id string) *corev1.Pod {
	t.Helper()
	for {
		p, err := e.cs.CoreV1().Pods(ns).Get(e.ctx, rtkube.Name(id), metav1.GetOptions{})
		if err == nil {
			return p
		}
		select {
		case <-e.ctx.Done():
			t.Fatalf("no pod for %s: %v", id, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitState waits until the unit's state satisfies ok.
func waitState(t *testing.T, ctx context.Context, rt runtime.Runtime, id string, ok func(runtime.State) bool) runtime.State {
	t.Helper()
	for {
		st, err := rt.State(ctx, id)
		if err == nil && ok(st) {
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatalf("unit %s: state %+v, err %v", id, st, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// podGone waits until the unit has no pod.
func (e *env) podGone(t *testing.T, id string) {
	t.Helper()
	for {
		_, err := e.cs.CoreV1().Pods(ns).Get(e.ctx, rtkube.Name(id), metav1.GetOptions{})
		if err != nil {
			return
		}
		select {
		case <-e.ctx.Done():
			t.Fatalf("the pod of %s is still there", id)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

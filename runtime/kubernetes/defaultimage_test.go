package kubernetes_test

import (
	"testing"
	"time"

	"cairn.dev/cairn/runtime"
	rtkube "cairn.dev/cairn/runtime/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestDefaultImage_AUnitThatNamesNoImageRunsInTheDefaultOne(t *testing.T) {
	e := newEnv(t)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(e.kc)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := rtkube.New(rtkube.Options{Config: cfg, Namespace: ns, KillGrace: time.Second,
		RetryInterval: 100 * time.Millisecond, DefaultImage: "example.com/tools:1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	waitReady(t, e.ctx, rt)

	own := workerSpec(t, "uid-own-image", "example.com/worker:1")
	none := workerSpec(t, "uid-no-image", "")
	for _, s := range []runtime.Spec{own, none} {
		if st, err := rt.Start(e.ctx, s); err != nil || st.Phase != runtime.PhasePending {
			t.Fatalf("Start %s = %+v, %v; want Pending", s.ID, st, err)
		}
	}
	if got := e.podOf(t, none.ID).Spec.Containers[0].Image; got != "example.com/tools:1" {
		t.Errorf("the image of a unit that names none = %q, want the default example.com/tools:1", got)
	}
	if got := e.podOf(t, own.ID).Spec.Containers[0].Image; got != "example.com/worker:1" {
		t.Errorf("the image of a unit that names one = %q, want its own example.com/worker:1", got)
	}
}

package kubernetes

import (
	"context"
	"testing"
	"time"

	"cairn.dev/cairn/internal/testkit/kubetest"
	"cairn.dev/cairn/runtime"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A unit whose Secret exists but whose pod Start has not created yet is
// Pending while this runtime is starting it, and Lost otherwise (a start
// that crashed between the two: the pod never comes, and nothing starts
// it twice).
func TestObserve_ASecretWithoutPodIsPendingOnlyWhileStarting(t *testing.T) {
	c := kubetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := c.Config()
	if _, err := c.Clientset().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "u"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := New(Options{Config: cfg, Namespace: "u"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.ready(ctx); err != nil {
		t.Fatal(err)
	}
	for _, starting := range []bool{true, false} {
		id := "ev-half-started"
		if !starting {
			id = "ev-crashed"
		}
		sec := buildSecret(runtime.Spec{ID: id}, unitInfo{}, r.pod, nil)
		if _, err := r.cs.CoreV1().Secrets("u").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		r.mu.Lock()
		r.starting[sec.Name] = starting
		r.mu.Unlock()
		st, err := r.State(ctx, id)
		want := runtime.PhaseLost
		if starting {
			want = runtime.PhasePending
		}
		if err != nil || st.Phase != want {
			t.Errorf("starting %v: State = %+v, %v; want %s", starting, st, err, want)
		}
	}
}

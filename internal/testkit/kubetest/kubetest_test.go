package kubetest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"cairn.dev/cairn/internal/testkit/kubetest"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func TestCluster_ObjectsSurviveARestartOfTheAPIServer(t *testing.T) {
	c := kubetest.Start(t)
	ctx := ctx(t)
	cs := c.Clientset()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "app"}, Data: map[string]string{"color": "blue"}}
	if _, err := cs.CoreV1().ConfigMaps("app").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap: %v", err)
	}

	c.Stop()
	if _, err := cs.CoreV1().ConfigMaps("app").Get(ctx, "settings", metav1.GetOptions{}); err == nil {
		t.Fatal("get configmap while the apiserver is stopped: no error")
	}
	c.Restart()

	got, err := cs.CoreV1().ConfigMaps("app").Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get configmap after restart: %v", err)
	}
	if got.Data["color"] != "blue" {
		t.Errorf("configmap data after restart = %v, want color=blue", got.Data)
	}
}

func TestCluster_KubeconfigConnectsAsAdmin(t *testing.T) {
	c := kubetest.Start(t)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(c.Kubeconfig())
	if err != nil {
		t.Fatalf("parse kubeconfig: %v", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version: %v", err)
	}
	want, _ := kubetest.Version()
	if v.GitVersion != want {
		t.Errorf("server version = %s, want %s", v.GitVersion, want)
	}
	// RBAC: the admin (system:masters) may do anything.
	ssar, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx(t), &authzReview, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("self subject rules review: %v", err)
	}
	admin := slices.ContainsFunc(ssar.Status.ResourceRules, func(r authorizationv1.ResourceRule) bool {
		return slices.Equal(r.Verbs, []string{"*"}) && slices.Equal(r.APIGroups, []string{"*"}) && slices.Equal(r.Resources, []string{"*"})
	})
	if !admin {
		t.Errorf("admin rules = %+v, want one allowing everything", ssar.Status.ResourceRules)
	}
}

func TestCluster_ControllerManagerCreatesReplicaSets(t *testing.T) {
	c := kubetest.Start(t)
	c.StartControllerManager()
	ctx := ctx(t)
	cs := c.Clientset()
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.invalid/web"}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	w, err := cs.AppsV1().ReplicaSets("default").Watch(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch of replica sets ended before one was created")
		}
		rs := ev.Object.(*appsv1.ReplicaSet)
		if ref := metav1.GetControllerOf(rs); ref == nil || ref.Name != "web" {
			t.Errorf("replica set %s controlled by %v, want deployment web", rs.Name, ref)
		}
	case <-ctx.Done():
		t.Fatal("no replica set for the deployment")
	}
}

var authzReview = authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "default"}}

package manifest

import (
	"slices"
	"testing"
	"time"

	"cairn.dev/cairn/deployer/kube"
)

func mr(apiVersion, kind, name string, p kube.Policy) kube.ManagedResource {
	return kube.ManagedResource{APIVersion: apiVersion, Kind: kind, Name: name, Policy: p}
}

func names(rs []kube.ManagedResource) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}

func TestDeletionOrder_ReverseWithCRDsThenNamespacesLast(t *testing.T) {
	cases := []struct {
		name string
		in   []kube.ManagedResource
		want []string
	}{
		{"reverse", []kube.ManagedResource{mr("v1", "ConfigMap", "a", ""), mr("apps/v1", "Deployment", "b", ""), mr("v1", "Service", "c", "")}, []string{"c", "b", "a"}},
		{"namespace first applied, last deleted", []kube.ManagedResource{mr("v1", "Namespace", "ns", ""), mr("v1", "ConfigMap", "a", ""), mr("v1", "ConfigMap", "b", "")}, []string{"b", "a", "ns"}},
		{"crds before namespaces", []kube.ManagedResource{mr("v1", "Namespace", "ns", ""), mr("apiextensions.k8s.io/v1", "CustomResourceDefinition", "crd", ""),
			mr("example.com/v1", "Widget", "w", ""), mr("v1", "Namespace", "ns2", "")}, []string{"w", "crd", "ns2", "ns"}},
		{"a kind named Namespace of another group is not one", []kube.ManagedResource{mr("example.com/v1", "Namespace", "x", ""), mr("v1", "ConfigMap", "a", "")}, []string{"a", "x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := names(DeletionOrder(c.in)); !slices.Equal(got, c.want) {
				t.Fatalf("DeletionOrder = %v, want %v", got, c.want)
			}
		})
	}
}

func TestPrunable_OnlyManagedObjectsNoLongerRendered(t *testing.T) {
	old := []kube.ManagedResource{mr("v1", "ConfigMap", "stays", ""), mr("v1", "ConfigMap", "dropped", kube.PolicyManage),
		mr("v1", "ConfigMap", "kept", kube.PolicyKeep), mr("v1", "ConfigMap", "ignored", kube.PolicyIgnore), mr("apps/v1beta1", "Deployment", "moved", "")}
	current := []kube.ManagedResource{mr("v1", "ConfigMap", "stays", ""), mr("apps/v1", "Deployment", "moved", "")}
	if got := names(Prunable(old, current)); !slices.Equal(got, []string{"dropped"}) {
		t.Fatalf("Prunable = %v, want [dropped] (a new apiVersion of the same object is the same object)", got)
	}
}

func TestBackoff_DoublesUpTo30s(t *testing.T) {
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	for i, w := range want {
		if got := Backoff(i + 1); got != w {
			t.Errorf("Backoff(%d) = %s, want %s", i+1, got, w)
		}
	}
}

func TestDeadline_SpecTimeoutOverridesTheDefault(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	five := 5 * time.Second
	cases := []struct {
		name string
		spec *time.Duration
		def  time.Duration
		want time.Duration
		ok   bool
	}{
		{"default", nil, time.Minute, time.Minute, true},
		{"spec", &five, time.Minute, five, true},
		{"spec without default", &five, -1, five, true},
		{"unbounded", nil, -1, 0, false},
	}
	for _, c := range cases {
		got, ok := Deadline(t0, c.spec, c.def)
		if ok != c.ok || ok && !got.Equal(t0.Add(c.want)) {
			t.Errorf("%s: Deadline = %s, %t", c.name, got, ok)
		}
	}
}

func TestMarkReady_AnObjectIsReadyWhenEveryCheckOfItPasses(t *testing.T) {
	rs := []kube.ManagedResource{mr("v1", "ConfigMap", "a", ""), mr("apps/v1", "Deployment", "b", "")}
	rep := kube.Report{States: []kube.State{
		{Ref: rs[0].Ref(), Ready: true}, {Ref: rs[1].Ref(), Ready: true},
		{Ref: kube.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "b"}, Message: "custom check x: no"},
	}}
	MarkReady(rs, rep)
	if !rs[0].Ready || rs[1].Ready || rs[1].Message != "custom check x: no" {
		t.Fatalf("MarkReady = %+v", rs)
	}
}

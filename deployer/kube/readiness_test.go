package kube

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func obj(t *testing.T, js string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(js), &u.Object); err != nil {
		t.Fatalf("bad test object %s: %v", js, err)
	}
	return u
}

func TestCheck_DefaultsPerKind(t *testing.T) {
	cases := []struct {
		name, obj string
		ready     bool
		msg       string // part of the message when not ready
	}{
		{"deployment ready", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":2},"spec":{"replicas":2},
			"status":{"observedGeneration":2,"updatedReplicas":2,"readyReplicas":2,"availableReplicas":2}}`, true, ""},
		{"deployment generation not observed", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":3},"spec":{"replicas":1},
			"status":{"observedGeneration":2,"updatedReplicas":1,"readyReplicas":1,"availableReplicas":1}}`, false, "not observed generation 3"},
		{"deployment replicas missing, conditions named", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":1},"spec":{"replicas":3},
			"status":{"observedGeneration":1,"updatedReplicas":3,"readyReplicas":1,"availableReplicas":1,
			"conditions":[{"type":"Available","status":"False","reason":"MinimumReplicasUnavailable","message":"Deployment does not have minimum availability."}]}}`,
			false, "1 of 3 replicas are ready; conditions: Available=False (MinimumReplicasUnavailable: Deployment does not have minimum availability.)"},
		{"deployment default one replica", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":1},"spec":{},"status":{"observedGeneration":1}}`, false, "0 of 1 replicas are updated"},
		{"statefulset ready", `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"generation":1},"spec":{"replicas":1},"status":{"observedGeneration":1,"updatedReplicas":1,"readyReplicas":1}}`, true, ""},
		{"replicaset not ready", `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"generation":1},"spec":{"replicas":2},"status":{"observedGeneration":1,"readyReplicas":1}}`, false, "1 of 2 replicas are ready"},
		{"daemonset ready", `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"generation":1},"status":{"observedGeneration":1,"desiredNumberScheduled":2,"updatedNumberScheduled":2,"numberReady":2,"numberAvailable":2}}`, true, ""},
		{"daemonset not ready", `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"generation":1},"status":{"observedGeneration":1,"desiredNumberScheduled":2,"updatedNumberScheduled":2,"numberReady":1}}`, false, "numberReady is 1 of 2"},
		{"job complete", `{"apiVersion":"batch/v1","kind":"Job","status":{"conditions":[{"type":"Complete","status":"True"}]}}`, true, ""},
		{"job failed", `{"apiVersion":"batch/v1","kind":"Job","status":{"conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded"}]}}`, false, "it has failed; conditions: Failed=True (BackoffLimitExceeded)"},
		{"job running", `{"apiVersion":"batch/v1","kind":"Job","status":{}}`, false, "not completed"},
		{"pod running ready", `{"apiVersion":"v1","kind":"Pod","status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`, true, ""},
		{"pod running not ready", `{"apiVersion":"v1","kind":"Pod","status":{"phase":"Running","conditions":[{"type":"Ready","status":"False","reason":"ContainersNotReady"}]}}`, false, "Ready=False (ContainersNotReady)"},
		{"pod succeeded", `{"apiVersion":"v1","kind":"Pod","status":{"phase":"Succeeded"}}`, true, ""},
		{"pod pending", `{"apiVersion":"v1","kind":"Pod","status":{"phase":"Pending"}}`, false, "its phase is Pending"},
		{"crd established", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","status":{"conditions":[{"type":"Established","status":"True"}]}}`, true, ""},
		{"crd not established", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","status":{"conditions":[{"type":"NamesAccepted","status":"True"}]}}`, false, "not Established"},
		{"namespace active", `{"apiVersion":"v1","kind":"Namespace","status":{"phase":"Active"}}`, true, ""},
		{"namespace terminating", `{"apiVersion":"v1","kind":"Namespace","status":{"phase":"Terminating"}}`, false, `"Terminating", not Active`},
		{"configmap exists", `{"apiVersion":"v1","kind":"ConfigMap","data":{}}`, true, ""},
		{"custom resource exists", `{"apiVersion":"example.com/v1","kind":"Deployment","status":{}}`, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ready, msg := Check(obj(t, c.obj))
			if ready != c.ready || !strings.Contains(msg, c.msg) || (c.ready && msg != "") {
				t.Fatalf("Check = %t, %q; want %t with %q", ready, msg, c.ready, c.msg)
			}
		})
	}
}

func TestCheckCustom_ValueInList(t *testing.T) {
	o := obj(t, `{"apiVersion":"v1","kind":"ConfigMap","data":{"state":"done"},"status":{"n":3,"ok":true}}`)
	cases := []struct {
		name, path, in string
		ready          bool
		msg            string
	}{
		{"string in", ".data.state", `["pending","done"]`, true, ""},
		{"braces allowed", "{.data.state}", `["done"]`, true, ""},
		{"string not in", ".data.state", `["ready"]`, false, `.data.state is done, not one of "ready"`},
		{"number compares by value", ".status.n", `[3]`, true, ""},
		{"bool", ".status.ok", `[true]`, true, ""},
		{"missing path", ".status.nothing", `["x"]`, false, "names nothing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var in []json.RawMessage
			if err := json.Unmarshal([]byte(c.in), &in); err != nil {
				t.Fatal(err)
			}
			ready, msg := CheckCustom(o, CustomCheck{Name: "c", JSONPath: c.path, In: in})
			if ready != c.ready || !strings.Contains(msg, c.msg) {
				t.Fatalf("CheckCustom = %t, %q; want %t with %q", ready, msg, c.ready, c.msg)
			}
		})
	}
}

// mapGetter is a Getter over a fixed set of objects (a cluster's answers
// for the pure parts; the deployer's tests use a real apiserver).
type mapGetter map[ObjectRef]*unstructured.Unstructured

func (m mapGetter) Get(_ context.Context, ref ObjectRef) (*unstructured.Unstructured, error) {
	if o, ok := m[ref]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: ref.Kind}, ref.Name)
}

func TestCheckAll_NamesTheFirstObjectNotReady(t *testing.T) {
	cm := ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Name: "a", Namespace: "ns"}
	dep := ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Namespace: "ns"}
	gone := ObjectRef{APIVersion: "v1", Kind: "Secret", Name: "gone", Namespace: "ns"}
	g := mapGetter{
		cm:  obj(t, `{"apiVersion":"v1","kind":"ConfigMap","data":{"k":"v"}}`),
		dep: obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":1},"spec":{"replicas":1},"status":{"observedGeneration":1}}`),
	}
	rep, err := CheckAll(context.Background(), g, []ObjectRef{cm, dep, gone}, Readiness{
		Custom: []CustomCheck{{Name: "value", Resource: cm, JSONPath: ".data.k", In: []json.RawMessage{json.RawMessage(`"w"`)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ready() || len(rep.States) != 4 {
		t.Fatalf("report %+v: want 4 states, not ready", rep)
	}
	bad, _ := rep.NotReady()
	if bad.Ref != dep || !strings.Contains(bad.Message, "0 of 1 replicas") {
		t.Fatalf("first not ready = %+v, want the Deployment", bad)
	}
	if s := rep.States[2]; s.Ready || s.Message != "it does not exist" {
		t.Fatalf("missing object state %+v", s)
	}
	if s := rep.States[3]; s.Ready || !strings.Contains(s.Message, "custom check value") {
		t.Fatalf("custom state %+v", s)
	}
	if !rep.Of(cm).Ready {
		t.Fatalf("Of(cm) should be the default check's ready state")
	}
	rep, err = CheckAll(context.Background(), g, []ObjectRef{dep}, Readiness{Disabled: true})
	if err != nil || !rep.Ready() {
		t.Fatalf("disabled readiness: %+v %v", rep, err)
	}
}

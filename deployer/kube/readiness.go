package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// State is the readiness of one object.
type State struct {
	Ref   ObjectRef
	Ready bool
	// Message says why it is not ready (its conditions, or what is
	// missing); empty when ready.
	Message string
}

// Report is the readiness of a deploy item's objects, in the order
// checked.
type Report struct {
	States []State
}

// Ready reports whether every object is ready.
func (r Report) Ready() bool {
	_, bad := r.NotReady()
	return !bad
}

// NotReady returns the first object that is not ready, if any.
func (r Report) NotReady() (State, bool) {
	for _, s := range r.States {
		if !s.Ready {
			return s, true
		}
	}
	return State{}, false
}

// Of returns the state of ref (ready when not checked).
func (r Report) Of(ref ObjectRef) State {
	for _, s := range r.States {
		if s.Ref == ref {
			return s
		}
	}
	return State{Ref: ref, Ready: true}
}

// Getter reads objects of a cluster; a missing object is an error for
// which apierrors.IsNotFound holds. *Cluster is one.
type Getter interface {
	// Get reads the object ref names. It blocks on the cluster, within
	// ctx.
	Get(ctx context.Context, ref ObjectRef) (*unstructured.Unstructured, error)
}

// CheckAll reads each of refs and checks it (Check, unless r.Disabled),
// then runs r's custom checks, whose states follow. A missing object is
// not ready. It blocks on the cluster; the error is a read's, other than
// NotFound.
func CheckAll(ctx context.Context, g Getter, refs []ObjectRef, r Readiness) (Report, error) {
	var rep Report
	if r.Disabled {
		return rep, nil
	}
	for _, ref := range refs {
		obj, err := g.Get(ctx, ref)
		switch {
		case apierrors.IsNotFound(err):
			rep.States = append(rep.States, State{Ref: ref, Message: "it does not exist"})
		case err != nil:
			return Report{}, err
		default:
			ready, msg := Check(obj)
			rep.States = append(rep.States, State{Ref: ref, Ready: ready, Message: msg})
		}
	}
	for _, c := range r.Custom {
		obj, err := g.Get(ctx, c.Resource)
		switch {
		case apierrors.IsNotFound(err):
			rep.States = append(rep.States, State{Ref: c.Resource, Message: fmt.Sprintf("custom check %s: it does not exist", c.Name)})
		case err != nil:
			return Report{}, err
		default:
			ready, msg := CheckCustom(obj, c)
			rep.States = append(rep.States, State{Ref: c.Resource, Ready: ready, Message: msg})
		}
	}
	return rep, nil
}

// CheckCustom reports whether the value at c.JSONPath in obj is one of
// c.In, and if not, what it is.
func CheckCustom(obj *unstructured.Unstructured, c CustomCheck) (bool, string) {
	v, err := Lookup(obj.Object, c.JSONPath)
	if err != nil {
		return false, fmt.Sprintf("custom check %s: %v", c.Name, err)
	}
	for _, want := range c.In {
		if sameJSON(v, want) {
			return true, ""
		}
	}
	ins := make([]string, len(c.In))
	for i, w := range c.In {
		ins[i] = string(w)
	}
	return false, fmt.Sprintf("custom check %s: %s is %v, not one of %s", c.Name, c.JSONPath, v, strings.Join(ins, ", "))
}

// Check applies the default readiness check of obj's kind: workloads
// (Deployment, StatefulSet, DaemonSet, ReplicaSet) have observed their
// generation and have their replicas updated and ready; a Job has
// completed; a Pod runs and is Ready, or has succeeded; a
// CustomResourceDefinition is Established; a Namespace is Active; any
// other object is ready as it exists. The message says what is missing,
// with the object's conditions.
func Check(obj *unstructured.Unstructured) (bool, string) {
	gk := obj.GroupVersionKind().GroupKind()
	var msg string
	switch gk.Group + "/" + gk.Kind {
	case "apps/Deployment":
		msg = checkReplicas(obj, "updatedReplicas", "readyReplicas", "availableReplicas")
	case "apps/StatefulSet":
		msg = checkReplicas(obj, "updatedReplicas", "readyReplicas")
	case "apps/ReplicaSet":
		msg = checkReplicas(obj, "readyReplicas", "availableReplicas")
	case "apps/DaemonSet":
		msg = checkDaemonSet(obj)
	case "batch/Job":
		msg = checkJob(obj)
	case "/Pod":
		msg = checkPod(obj)
	case "apiextensions.k8s.io/CustomResourceDefinition":
		if c, _ := condition(obj, "Established"); c != "True" {
			msg = "it is not Established"
		}
	case "/Namespace":
		if p, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); p != "Active" {
			msg = fmt.Sprintf("its phase is %q, not Active", p)
		}
	}
	if msg == "" {
		return true, ""
	}
	if cs := conditions(obj); cs != "" {
		msg += "; conditions: " + cs
	}
	return false, msg
}

// checkGeneration says what is missing when obj's controller has not yet
// observed its generation.
func checkGeneration(obj *unstructured.Unstructured) string {
	seen, _, _ := nestedInt(obj, "status", "observedGeneration")
	if gen, _, _ := nestedInt(obj, "metadata", "generation"); seen < gen {
		return fmt.Sprintf("its controller has not observed generation %d yet (observed %d)", gen, seen)
	}
	return ""
}

// checkReplicas says which of the status counters is below spec.replicas
// (default 1).
func checkReplicas(obj *unstructured.Unstructured, counters ...string) string {
	if m := checkGeneration(obj); m != "" {
		return m
	}
	want, found, _ := nestedInt(obj, "spec", "replicas")
	if !found {
		want = 1
	}
	for _, c := range counters {
		have, _, _ := nestedInt(obj, "status", c)
		if have < want {
			return fmt.Sprintf("%d of %d replicas are %s", have, want, strings.TrimSuffix(c, "Replicas"))
		}
	}
	return ""
}

func checkDaemonSet(obj *unstructured.Unstructured) string {
	if m := checkGeneration(obj); m != "" {
		return m
	}
	want, _, _ := nestedInt(obj, "status", "desiredNumberScheduled")
	for _, c := range []string{"updatedNumberScheduled", "numberReady", "numberAvailable"} {
		have, _, _ := nestedInt(obj, "status", c)
		if have < want {
			return fmt.Sprintf("%s is %d of %d desired", c, have, want)
		}
	}
	return ""
}

func checkJob(obj *unstructured.Unstructured) string {
	if s, _ := condition(obj, "Failed"); s == "True" {
		return "it has failed"
	}
	if s, _ := condition(obj, "Complete"); s != "True" {
		return "it has not completed"
	}
	return ""
}

func checkPod(obj *unstructured.Unstructured) string {
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	switch phase {
	case "Succeeded":
		return ""
	case "Running":
		if s, _ := condition(obj, "Ready"); s == "True" {
			return ""
		}
		return "it runs but is not Ready"
	}
	if phase == "" {
		phase = "unknown"
	}
	return fmt.Sprintf("its phase is %s", phase)
}

// condition returns the status and the reason of obj's condition typ.
func condition(obj *unstructured.Unstructured, typ string) (status, reason string) {
	cs, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range cs {
		m, ok := c.(map[string]any)
		if ok && m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			return s, r
		}
	}
	return "", ""
}

// conditions renders obj's conditions: "Type=Status (Reason: message)",
// sorted by type.
func conditions(obj *unstructured.Unstructured) string {
	cs, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var out []string
	for _, c := range cs {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		s := fmt.Sprintf("%v=%v", m["type"], m["status"])
		if r, _ := m["reason"].(string); r != "" {
			s += " (" + r
			if msg, _ := m["message"].(string); msg != "" {
				s += ": " + msg
			}
			s += ")"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// nestedInt reads an integer field of obj, whether decoded as int64 (by
// client-go) or float64 (by encoding/json); found is false when absent.
func nestedInt(obj *unstructured.Unstructured, fields ...string) (n int64, found bool, err error) {
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	if !found || err != nil {
		return 0, found, err
	}
	switch x := v.(type) {
	case int64:
		return x, true, nil
	case float64:
		return int64(x), true, nil
	case int:
		return int64(x), true, nil
	}
	return 0, false, fmt.Errorf("%s is not a number", strings.Join(fields, "."))
}

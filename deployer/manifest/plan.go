package manifest

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"cairn.dev/cairn/deployer/kube"
)

// sameObject reports whether a and b name the same object: same group,
// kind, namespace and name (the version may differ).
func sameObject(a, b kube.ObjectRef) bool {
	ga, _ := schema.ParseGroupVersion(a.APIVersion)
	gb, _ := schema.ParseGroupVersion(b.APIVersion)
	return ga.Group == gb.Group && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name
}

// Prunable returns the objects of old that are not in current and that
// their policy deletes: what an update must delete. Objects of old of
// other policies are let go.
func Prunable(old, current []kube.ManagedResource) []kube.ManagedResource {
	var out []kube.ManagedResource
	for _, o := range old {
		kept := slices.ContainsFunc(current, func(c kube.ManagedResource) bool { return sameObject(o.Ref(), c.Ref()) })
		if !kept && o.Policy.Deletes() {
			out = append(out, o)
		}
	}
	return out
}

// DeletionOrder is the order in which an item's objects are deleted: the
// reverse of their application, except that CustomResourceDefinitions,
// then Namespaces, come last (their deletion deletes what they hold).
func DeletionOrder(rs []kube.ManagedResource) []kube.ManagedResource {
	rank := func(r kube.ManagedResource) int {
		switch {
		case r.Kind == "CustomResourceDefinition" && groupOf(r.APIVersion) == "apiextensions.k8s.io":
			return 1
		case r.Kind == "Namespace" && groupOf(r.APIVersion) == "":
			return 2
		}
		return 0
	}
	out := slices.Clone(rs)
	slices.Reverse(out)
	slices.SortStableFunc(out, func(a, b kube.ManagedResource) int { return rank(a) - rank(b) })
	return out
}

func groupOf(apiVersion string) string {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return gv.Group
}

// MarkReady sets each resource's Ready and Message from rep: ready when
// every check of it passed; the message is its first failing check's.
func MarkReady(rs []kube.ManagedResource, rep kube.Report) {
	for i := range rs {
		rs[i].Ready, rs[i].Message = true, ""
		for _, s := range rep.States {
			if !s.Ready && sameObject(s.Ref, rs[i].Ref()) {
				rs[i].Ready, rs[i].Message = false, s.Message
				break
			}
		}
	}
}

// Backoff is the wait before retry attempt n (1, 2, ...) when the
// cluster does not answer: 1s doubling up to 30s.
func Backoff(n int) time.Duration {
	d := time.Second
	for i := 1; i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// Deadline is when an item's run must have ended: its lastReconcileTime
// plus its timeout (spec.timeout, else def); ok is false when there is
// none (def not positive and no spec.timeout).
func Deadline(last time.Time, specTimeout *time.Duration, def time.Duration) (time.Time, bool) {
	d := def
	if specTimeout != nil && *specTimeout > 0 {
		d = *specTimeout
	}
	if d <= 0 {
		return time.Time{}, false
	}
	return last.Add(d), true
}

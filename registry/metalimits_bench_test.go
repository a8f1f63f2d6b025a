package registry

import (
	"fmt"
	"testing"

	"cairn.dev/cairn/api"
)

// BenchmarkValidateMeta measures the metadata checks of an update whose
// lists hold n entries each (finalizers, owner references, labels,
// annotations). To walk every entry, the stored object already holds the
// same lists (as one written before the limits existed would, which the
// limits let shrink but not grow); a create of the same size is refused by
// the length checks alone ("create-over-limit"). ns/entry staying flat from
// 1k to 100k entries shows that the checks are linear.
func BenchmarkValidateMeta(b *testing.B) {
	r := &Registry{kinds: map[string]*Kind{}, byPlural: map[string]*Kind{}}
	k := &Kind{KindInfo: api.KindInfo{Kind: "Secret", Plural: "secrets", Namespaced: true}}
	r.kinds[k.Kind], r.byPlural[k.Plural] = k, k
	for _, n := range []int{1000, 10000, 100000} {
		obj := bigMeta(n)
		old := obj.DeepCopy()
		b.Run(fmt.Sprintf("update-%d", n), func(b *testing.B) {
			for b.Loop() {
				if errs := append(r.validateMeta(k, obj, old), validateFinalizerChange(old, obj)...); len(errs) > 0 {
					b.Fatal(errs)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n*4), "ns/entry")
		})
		b.Run(fmt.Sprintf("create-over-limit-%d", n), func(b *testing.B) {
			for b.Loop() {
				if errs := r.validateMeta(k, obj, nil); len(errs) != 4 {
					b.Fatalf("want one error per list, got %d", len(errs))
				}
			}
		})
	}
}

// bigMeta is a Secret with n finalizers, owner references, labels and
// annotations, all distinct and well-formed.
func bigMeta(n int) *api.Object {
	o := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Secret"}}
	o.Name, o.Namespace, o.UID = "big", "default", "self"
	o.Labels, o.Annotations = make(map[string]string, n), make(map[string]string, n)
	for i := range n {
		s := fmt.Sprintf("x%d", i)
		o.Finalizers = append(o.Finalizers, "cairn.dev/"+s)
		o.OwnerReferences = append(o.OwnerReferences, api.OwnerReference{Kind: "Secret", Name: s, UID: "uid-" + s})
		o.Labels[s] = "v"
		o.Annotations[s] = "v"
	}
	return o
}

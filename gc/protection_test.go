package gc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/gc"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/trace"
)

// protect sets the deletion-protection annotation of o to v.
func (e *env) protect(o *api.Object, v string) {
	e.t.Helper()
	e.update(o, func(cur *api.Object) {
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[api.AnnotationDeletionProtection] = v
	})
}

func TestDeletionProtection_NobodyDeletesAProtectedObject(t *testing.T) {
	e := newEnv(t, true)
	e.startGC()
	ctx := context.Background()
	s := e.secret("db")
	e.protect(s, "true")
	for _, force := range []bool{false, true} {
		_, _, err := e.c.Delete(ctx, api.KindSecret, ns, "db", api.DeleteOptions{Force: force})
		if api.ReasonOf(err) != api.ReasonForbidden || !strings.Contains(err.Error(), api.AnnotationDeletionProtection) {
			t.Fatalf("delete (force %v) of a protected secret: %v, want Forbidden naming the annotation", force, err)
		}
	}
	if e.state(s) != "live" {
		t.Fatalf("the protected secret is %s", e.state(s))
	}
	// Bad input: only "true" and "false".
	cur, _ := e.get(api.KindSecret, ns, "db")
	cur.Annotations[api.AnnotationDeletionProtection] = "yes"
	if _, err := e.c.Update(ctx, cur); api.ReasonOf(err) != api.ReasonInvalid ||
		!strings.Contains(err.Error(), "metadata.annotations[cairn.dev/deletion-protection]") {
		t.Fatalf("protection %q: %v, want Invalid naming the annotation", "yes", err)
	}
	// Lifted: the deletion goes on.
	e.protect(s, "false")
	e.del(s, false)
	e.allGone(s)
}

// A protected dependent blocks its owner's cascade and its namespace's
// deletion; the collector's trace says why; lifting the protection lets
// both go on.
func TestDeletionProtection_BlocksTheCascadesThatWouldTakeIt(t *testing.T) {
	e := newEnv(t, false)
	traces := trace.NewStore(50, 0)
	e.startCollector(e.c, gc.Options{Workers: 4, ConfirmRetry: 50 * time.Millisecond}, manager.Options{Logger: testLogger(), Traces: traces})
	owner := e.secret("owner")
	kept, other := e.secret("kept"), e.secret("other")
	e.setOwners(kept, owner)
	e.setOwners(other, owner)
	e.protect(kept, "true")
	e.del(owner, false)
	e.allGone(other)
	e.waitState(kept, "live")
	if e.state(owner) != "deleting" {
		t.Fatalf("the owner of a protected dependent is %s, want deleting", e.state(owner))
	}
	e.eventually("the collector's trace to name the protection", func() string {
		var steps []string
		if tr, ok := traces.Get(api.KindSecret, ns, "owner"); ok {
			for _, r := range tr.Reconciles {
				for _, st := range r.Steps {
					steps = append(steps, st.Message)
				}
			}
		}
		got := strings.Join(steps, "\n")
		if !strings.Contains(got, api.AnnotationDeletionProtection) {
			return "without it: " + got
		}
		return ""
	})

	// The namespace's deletion is held too.
	nsObj, err := e.get(gc.NamespaceKind, "", ns)
	if err != nil {
		t.Fatal(err)
	}
	e.del(nsObj, false)
	e.waitState(kept, "live")
	if e.state(nsObj) != "deleting" {
		t.Fatalf("the namespace is %s, want deleting while it holds a protected object", e.state(nsObj))
	}
	e.protect(kept, "false")
	e.allGone(kept, owner, nsObj)
}

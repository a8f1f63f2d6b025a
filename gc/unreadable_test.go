package gc_test

import (
	"fmt"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/gc"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/manager"
)

// The collector never deletes a dependent because it could not read its
// owner: with every read of the owner's kind failing, the owner is absent
// from what the collector sees, and the dependent stays (the collector
// waits for that kind's first list before it acts at all); once reads work
// again, the collector collects as usual and the dependent still stays.
func TestCollector_NeverDeletesADependentBecauseAReadFailed(t *testing.T) {
	e := newEnv(t, false)
	owner := e.create(testkit.Object(api.KindDataObject, ns, "owner"))
	dep := e.secret("dep", testkit.OwnedBy(owner))
	fr := testkit.NewFailingReads(e.c, api.KindDataObject)
	e.startCollector(fr, gc.Options{Workers: 4, ConfirmRetry: 20 * time.Millisecond}, manager.Options{Logger: testLogger()})
	e.eventually("the collector's reads of the owner's kind failing", func() string {
		if n := fr.Failures(); n < 5 {
			return fmt.Sprintf("%d failed reads", n)
		}
		return ""
	})
	if s := e.state(dep); s != "live" {
		t.Fatalf("dependent %s while its owner could not be read; want live", s)
	}
	fr.Fail(false)
	o3 := e.secret("o3")
	d3 := e.secret("d3", testkit.OwnedBy(o3))
	e.del(o3, false)
	e.allGone(o3, d3)
	if s := e.state(dep); s != "live" {
		t.Fatalf("dependent %s once reads work again; want live", s)
	}
}

package installation_test

// Tests of the places where cairn departs from the seed on purpose
// (docs/departures.md, "Installations and executions"): each asserts what
// cairn does instead, and fails if the seed's behaviour comes back.

import (
	"slices"
	"sync"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// recordInstallations watches the installations of e.ns and records, per
// event, the installation's name, phase and operation annotation, until
// stop is called.
func (e *env) recordInstallations() (stop func() []api.Installation) {
	e.t.Helper()
	w, err := e.c.Watch(e.ctx, api.KindInstallation, e.ns, api.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []api.Installation
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.Events() {
			var in api.Installation
			if ev.Object.Into(&in) == nil {
				mu.Lock()
				seen = append(seen, in)
				mu.Unlock()
			}
		}
	}()
	return func() []api.Installation {
		w.Stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// Standard step 4: the seed sets PendingDependencies before it checks
// whether the update can be done; cairn writes it only when the update
// must wait, so an unblocked installation goes straight to Progressing.
func TestDeparture_PendingDependenciesIsWrittenOnlyWhenTheUpdateWaits(t *testing.T) {
	e := start(t)
	stop := e.recordInstallations()
	e.apply(singleYAML)
	e.finish("one", 0, api.DeploySucceeded, nil)
	e.waitPhase("one", api.InstallationSucceeded)
	var phases []api.InstallationPhase
	for _, in := range stop() {
		if len(phases) == 0 || phases[len(phases)-1] != in.Status.Phase {
			phases = append(phases, in.Status.Phase)
		}
	}
	if slices.Contains(phases, api.InstallationPendingDependencies) || !slices.Contains(phases, api.InstallationProgressing) {
		t.Fatalf("phases written %v: want Progressing and no PendingDependencies on the unblocked path", phases)
	}
}

// Core step 5: the seed updates a final installation's phase to the
// combined phase of its nested objects; an Aborted one keeps Aborted as
// long as they stay final (else the abort would be undone by the first
// reconcile after it), and follows them once they run again.
func TestDeparture_AbortedStaysAbortedWhileTheNestedObjectsStayFinal(t *testing.T) {
	e := start(t)
	e.apply(singleYAML)
	g := e.finish("one", 0, api.DeploySucceeded, nil)
	e.waitPhase("one", api.InstallationSucceeded)
	e.annotate(api.KindInstallation, "one", api.AnnotationOperation, api.OperationAbort)
	e.waitInst("one", "Aborted", func(in *api.Installation) string {
		if in.Status.Phase != api.InstallationAborted || in.Annotations[api.AnnotationOperation] != "" {
			return "not yet"
		}
		return ""
	})
	// The execution's phase changes from Succeeded to Failed: Aborted stays.
	ex, err := e.exec("one")
	if err != nil {
		t.Fatal(err)
	}
	ex.Status.Phase = api.DeployFailed
	ex.Status.LastError = &api.LastError{Reason: "DeployItemFailed", Message: "deploy item a failed: exit status 3"}
	if _, err := client.For[*api.Execution](e.c).UpdateStatus(e.ctx, ex); err != nil {
		t.Fatal(err)
	}
	e.waitExplain("one", "5. nested objects unchanged (Failed)")
	if in, _ := e.inst("one"); in.Status.Phase != api.InstallationAborted {
		t.Fatalf("status %s: the nested check replaced Aborted", statusString(in))
	}
	// The execution runs again: the installation follows it.
	e.annotate(api.KindExecution, "one", api.AnnotationOperation, api.OperationReconcile)
	e.finish("one", g-1, api.DeploySucceeded, nil)
	e.waitPhase("one", api.InstallationSucceeded)
}

// Standard step 6: the seed triggers every depending sibling when an
// installation succeeds; cairn triggers them when its exports changed
// (those waiting for it are reconciled by the watch of their exporter).
func TestDeparture_DependentsAreTriggeredOnlyWhenTheExportsChange(t *testing.T) {
	e := start(t)
	e.apply(pairYAML)
	e.finish("producer", 0, api.DeploySucceeded, nil)
	e.waitPhase("producer", api.InstallationSucceeded)
	// The reconcile that made the producer Succeeded (and triggered the
	// consumer after writing it) has ended.
	e.waitExplain("producer", "\nSucceeded\n")
	e.finish("consumer", 0, api.DeploySucceeded, nil)
	e.waitInst("consumer", "Succeeded, no operation pending", func(in *api.Installation) string {
		if in.Status.Phase != api.InstallationSucceeded || in.Annotations[api.AnnotationOperation] != "" {
			return "not yet"
		}
		return ""
	})
	stop := e.recordInstallations()
	// The producer runs again (a reconcile re-checks its execution) and
	// succeeds with the same exports.
	e.annotate(api.KindInstallation, "producer", api.AnnotationOperation, api.OperationReconcile)
	e.waitExplain("producer", "6. exports unchanged: no dependent to trigger")
	for _, in := range stop() {
		if in.Name == "consumer" && in.Annotations[api.AnnotationOperation] != "" {
			t.Fatalf("consumer got the %s annotation although the producer's exports did not change", in.Annotations[api.AnnotationOperation])
		}
	}
}

package deployitem

import (
	"slices"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) string { return t0.Add(d).Format(time.RFC3339) }

type opt func(*api.DeployItem)

func ann(kv ...string) opt {
	return func(d *api.DeployItem) {
		for i := 0; i+1 < len(kv); i += 2 {
			d.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func phase(p api.DeployPhase, reason api.ErrorReason) opt {
	return func(d *api.DeployItem) {
		d.Status.Phase = p
		if reason != "" {
			d.Status.LastError = &api.LastError{Reason: reason}
		}
	}
}

func picked(at time.Duration) opt {
	return func(d *api.DeployItem) { d.Status.LastReconcileTime = t0.Add(at) }
}

func timeout(d time.Duration) opt {
	return func(i *api.DeployItem) { i.Spec.Timeout = &api.Duration{Duration: d} }
}

func deleting() opt { return func(d *api.DeployItem) { d.DeletionTimestamp = &t0 } }

// failedAt sets when the item's lastError was written.
func failedAt(at time.Duration) opt {
	return func(d *api.DeployItem) { d.Status.LastError.Time = t0.Add(at) }
}

// atNano is at with the nanoseconds, as the execution controller writes.
func atNano(d time.Duration) string { return t0.Add(d).Format(time.RFC3339Nano) }

func TestCheck_TimeoutsAndRequeueTime(t *testing.T) {
	ts := Timeouts{Pickup: time.Minute, Aborting: 2 * time.Minute, Progressing: 10 * time.Minute}
	for _, tc := range []struct {
		name    string
		now     time.Duration // after t0
		opts    []opt
		fail    api.ErrorReason // reason; "" none
		set     []string        // annotation keys set
		remove  []string        // annotation keys removed
		requeue time.Duration   // after t0; -1 none
		step    string
	}{
		{name: "nothing to watch", now: time.Hour, requeue: -1, step: "no cairn.dev/reconcile-time"},
		{name: "pickup pending: requeue 5s after it would expire", now: 30 * time.Second,
			opts: []opt{ann(api.AnnotationReconcileTime, at(0))}, requeue: time.Minute + 5*time.Second, step: "waiting for a deployer"},
		{name: "pickup timed out", now: time.Minute, opts: []opt{ann(api.AnnotationReconcileTime, at(0), api.AnnotationOperation, "reconcile")},
			fail: api.ReasonPickupTimeout, remove: []string{api.AnnotationOperation}, requeue: -1,
			step: "no deployer picked it up"},
		{name: "picked up since the reconcile time", now: time.Hour,
			opts: []opt{ann(api.AnnotationReconcileTime, at(0)), picked(0), phase(api.DeploySucceeded, "")}, requeue: -1, step: "picked up at"},
		{name: "picked up before the reconcile time: pending again", now: 30 * time.Second,
			opts:    []opt{ann(api.AnnotationReconcileTime, at(10*time.Second)), picked(0), phase(api.DeploySucceeded, "")},
			requeue: 75 * time.Second, step: "waiting for a deployer"},
		{name: "pickup already timed out", now: time.Hour, opts: []opt{ann(api.AnnotationReconcileTime, at(0)), phase(api.DeployFailed, api.ReasonPickupTimeout), failedAt(time.Minute)},
			requeue: -1, step: "already failed with a pickup timeout"},
		{name: "a pickup timeout older than the request is armed again", now: 2*time.Minute + 30*time.Second,
			opts:    []opt{ann(api.AnnotationReconcileTime, at(2*time.Minute)), phase(api.DeployFailed, api.ReasonPickupTimeout), failedAt(time.Minute)},
			requeue: 3*time.Minute + 5*time.Second, step: "waiting for a deployer"},
		{name: "the request after a pickup timeout times out again", now: 3 * time.Minute,
			opts: []opt{ann(api.AnnotationReconcileTime, at(2*time.Minute)), phase(api.DeployFailed, api.ReasonPickupTimeout), failedAt(time.Minute)},
			fail: api.ReasonPickupTimeout, requeue: -1, step: "no deployer picked it up"},
		{name: "a pickup earlier in the same second is not this request's", now: 30 * time.Second,
			opts:    []opt{ann(api.AnnotationReconcileTime, atNano(10*time.Second+500*time.Millisecond)), picked(10 * time.Second), phase(api.DeploySucceeded, "")},
			requeue: 75*time.Second + 500*time.Millisecond, step: "waiting for a deployer"},
		{name: "pickup timestamp unreadable", now: time.Hour, opts: []opt{ann(api.AnnotationReconcileTime, "yesterday")}, requeue: -1, step: "not an RFC 3339 time"},
		{name: "abort pending: requeue at abort time + aborting + 5s", now: time.Minute,
			opts:    []opt{ann(api.AnnotationOperation, "abort", api.AnnotationAbortTime, at(30*time.Second)), phase(api.DeployProgressing, ""), picked(0)},
			requeue: 2*time.Minute + 35*time.Second, step: "waiting for the deployer to abort"},
		{name: "abort without its time: the time is recorded", now: time.Minute,
			opts:    []opt{ann(api.AnnotationOperation, "abort"), phase(api.DeployProgressing, ""), picked(0)},
			set:     []string{api.AnnotationAbortTime},
			requeue: 3*time.Minute + 5*time.Second, step: "recorded cairn.dev/abort-time"},
		{name: "aborting timed out", now: 3 * time.Minute,
			opts: []opt{ann(api.AnnotationOperation, "abort", api.AnnotationAbortTime, at(0), api.AnnotationAbortTimeout, "true"), phase(api.DeployProgressing, ""), picked(0)},
			fail: api.ReasonAbortingTimeout, remove: []string{api.AnnotationOperation, api.AnnotationAbortTime, api.AnnotationAbortTimeout}, requeue: -1,
			step: "aborting: timed out"},
		{name: "aborting already timed out", now: time.Hour, opts: []opt{ann(api.AnnotationAbortTime, at(0)), phase(api.DeployFailed, api.ReasonAbortingTimeout)},
			requeue: -1, step: "already failed with an aborting timeout"},
		{name: "abort time on a final item: nothing", now: time.Hour, opts: []opt{ann(api.AnnotationAbortTime, at(0)), phase(api.DeploySucceeded, ""), picked(0)},
			requeue: -1, step: "no abort pending"},
		{name: "progressing: requeue at last reconcile + default + 5s", now: time.Minute,
			opts: []opt{phase(api.DeployProgressing, ""), picked(0)}, requeue: 10*time.Minute + 5*time.Second, step: "progressing: since"},
		{name: "progressing: spec.timeout overrides the default", now: time.Minute,
			opts: []opt{phase(api.DeployProgressing, ""), picked(0), timeout(90 * time.Second)}, requeue: 95 * time.Second},
		{name: "progressing timed out: abort asked for", now: 10 * time.Minute, opts: []opt{phase(api.DeployProgressing, ""), picked(0)},
			set: []string{api.AnnotationAbortTime, api.AnnotationAbortTimeout, api.AnnotationOperation}, requeue: -1, step: "abort asked for"},
		{name: "progressing: never picked up", now: time.Hour, opts: []opt{phase(api.DeployProgressing, "")}, requeue: -1, step: "not in progress"},
		{name: "progressing: final phase", now: time.Hour, opts: []opt{phase(api.DeploySucceeded, ""), picked(0)}, requeue: -1, step: "not in progress"},
		{name: "earliest of two pending timeouts", now: 10 * time.Second,
			opts:    []opt{ann(api.AnnotationReconcileTime, at(0)), phase(api.DeployProgressing, ""), picked(0), timeout(30 * time.Second)},
			requeue: 35 * time.Second},
		{name: "deleting: the uninstall is pending since the deletion", now: time.Minute,
			opts: []opt{deleting(), picked(-time.Hour), phase(api.DeployDeleting, "")}, requeue: 10*time.Minute + 5*time.Second, step: "progressing: since"},
		{name: "deleting: an uninstall over the timeout is aborted", now: 10 * time.Minute,
			opts: []opt{deleting(), picked(-time.Hour), phase(api.DeployDeleting, "")},
			set:  []string{api.AnnotationAbortTime, api.AnnotationAbortTimeout, api.AnnotationOperation}, requeue: -1, step: "abort asked for"},
		{name: "deleting: a retried uninstall counts from its retry", now: 11 * time.Minute,
			opts: []opt{deleting(), picked(5 * time.Minute), phase(api.DeployDeleting, "")}, requeue: 15*time.Minute + 5*time.Second},
		{name: "deleting: an abort no deployer carries out times out", now: 3 * time.Minute,
			opts: []opt{deleting(), ann(api.AnnotationOperation, "abort", api.AnnotationAbortTime, at(0)), phase(api.DeployDeleting, ""), picked(0)},
			fail: api.ReasonAbortingTimeout, remove: []string{api.AnnotationOperation, api.AnnotationAbortTime, api.AnnotationAbortTimeout}, requeue: -1,
			step: "aborting: timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &api.DeployItem{ObjectMeta: api.ObjectMeta{Name: "x", Generation: 1, Annotations: map[string]string{}}, Spec: api.DeployItemSpec{Type: "mock"}}
			for _, o := range tc.opts {
				o(d)
			}
			dec := Check(d, t0.Add(tc.now), ts)
			if got := reason(dec.Fail); got != tc.fail {
				t.Errorf("fail %q, want %q", got, tc.fail)
			}
			var set []string
			for k := range dec.Set {
				set = append(set, k)
			}
			slices.Sort(set)
			want := slices.Sorted(slices.Values(tc.set))
			if !slices.Equal(set, want) || !slices.Equal(dec.Remove, tc.remove) {
				t.Errorf("set %v remove %v, want %v %v", set, dec.Remove, want, tc.remove)
			}
			wantAt := time.Time{}
			if tc.requeue >= 0 {
				wantAt = t0.Add(tc.requeue)
			}
			if !dec.RequeueAt.Equal(wantAt) {
				t.Errorf("requeue at %v, want %v", dec.RequeueAt, wantAt)
			}
			if steps := strings.Join(dec.Steps, "\n"); !strings.Contains(steps, tc.step) {
				t.Errorf("steps %q do not say %q", steps, tc.step)
			}
		})
	}
}

func reason(e *api.LastError) api.ErrorReason {
	if e == nil {
		return ""
	}
	return e.Reason
}

func TestCheck_PickupTimeoutMessageSaysNoDeployerPickedItUp(t *testing.T) {
	d := &api.DeployItem{ObjectMeta: api.ObjectMeta{Annotations: map[string]string{api.AnnotationReconcileTime: at(0)}},
		Spec: api.DeployItemSpec{Type: "helm"}}
	dec := Check(d, t0.Add(time.Hour), Timeouts{Pickup: time.Minute})
	if dec.Fail == nil || !strings.Contains(dec.Fail.Message, `no deployer picked up this deploy item of type "helm"`) {
		t.Fatalf("fail %+v", dec.Fail)
	}
}

func TestCheck_AnUninstallThatTimesOutAbortingNamesTheWayOut(t *testing.T) {
	d := &api.DeployItem{ObjectMeta: api.ObjectMeta{DeletionTimestamp: &t0, Annotations: map[string]string{
		api.AnnotationOperation: "abort", api.AnnotationAbortTime: at(0)}},
		Spec: api.DeployItemSpec{Type: "container"}, Status: api.DeployItemStatus{Phase: api.DeployDeleting, LastReconcileTime: t0}}
	dec := Check(d, t0.Add(time.Hour), Timeouts{Aborting: time.Minute})
	if dec.Fail == nil || !strings.Contains(dec.Fail.Message, api.AnnotationDeleteWithoutUninstall+`: "true"`) {
		t.Fatalf("fail %+v, want it to name %s", dec.Fail, api.AnnotationDeleteWithoutUninstall)
	}
}

package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
)

// The soak's checks are plain functions over plain data: these tests pin
// what each reports, so that a soak reporting no problem means something.
// They need no server and run with the ordinary tests.

func TestSoakLostWrites_ReportsOnlyWhatNoAcknowledgedWriteExplains(t *testing.T) {
	inst := objectKey{api.KindInstallation, "soak-a", "inst-1", "u1"}
	ev := objectKey{api.KindEvent, "soak-a", "ev-x", "u2"}
	inTmp := objectKey{api.KindSecret, "tmp-3", "s", "u3"}
	created := func(k objectKey, rv string) ack { return ack{op: "create", key: k, rv: rv} }
	present := func(k objectKey, rv, touch string) *api.Object {
		return &api.Object{TypeMeta: api.TypeMeta{Kind: k.kind}, ObjectMeta: api.ObjectMeta{Namespace: k.ns, Name: k.name, UID: k.uid,
			ResourceVersion: rv, Annotations: map[string]string{soakTouch: touch}}}
	}
	for _, tc := range []struct {
		name string
		acks []ack
		objs []*api.Object
		lost string // a part of the one problem expected; "" for none
	}{
		{"created and there", []ack{created(inst, "10")}, []*api.Object{present(inst, "10", "0")}, ""},
		{"created and gone", []ack{created(ev, "10")}, nil, "lost: Event soak-a/ev-x"},
		{"gone after an acknowledged delete", []ack{created(ev, "10"), {op: "delete", key: ev}}, nil, ""},
		{"gone after a delete without an answer", []ack{created(ev, "10"), {op: "delete?", key: ev}}, nil, ""},
		{"gone with its namespace", []ack{created(inTmp, "10"), {op: "delete", key: objectKey{api.KindNamespace, "", "tmp-3", "n"}}}, nil, ""},
		{"gone with another namespace", []ack{created(inTmp, "10"), {op: "delete", key: objectKey{api.KindNamespace, "", "tmp-4", "n"}}}, nil, "lost: Secret tmp-3/s"},
		{"deleted by a Cleaner", []ack{created(inst, "10"), {op: "create", key: objectKey{api.KindCleaner, "soak-a", "cl-inst-1", "c"}, target: "inst-1"}}, nil, ""},
		{"a Cleaner of another installation", []ack{created(inst, "10"), {op: "create", key: objectKey{api.KindCleaner, "soak-a", "cl-inst-2", "c"}, target: "inst-2"}}, nil, "lost: Installation"},
		{"a Cleaner gone by itself", []ack{created(objectKey{api.KindCleaner, "soak-a", "cl", "c"}, "10")}, nil, ""},
		{"a touch lost", []ack{created(inst, "10"), {op: "touch", key: inst, rv: "12", touch: 5}}, []*api.Object{present(inst, "12", "3")}, "touch=3, but 5 was acknowledged"},
		{"a touch kept", []ack{created(inst, "10"), {op: "touch", key: inst, rv: "12", touch: 5}}, []*api.Object{present(inst, "14", "5")}, ""},
		{"a resourceVersion gone back", []ack{created(inst, "10"), {op: "touch", key: inst, rv: "12", touch: 5}}, []*api.Object{present(inst, "11", "5")}, "at resourceVersion 11, before the acknowledged 12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := map[string]*api.Object{}
			for _, o := range tc.objs {
				objs[o.UID] = o
			}
			got := lostWrites(tc.acks, objs)
			switch {
			case tc.lost == "" && len(got) > 0:
				t.Errorf("problems %q, want none", got)
			case tc.lost != "" && (len(got) != 1 || !strings.Contains(got[0], tc.lost)):
				t.Errorf("problems %q, want one containing %q", got, tc.lost)
			}
		})
	}
}

func TestSoakUnconverged_ReportsStuckOrphanedAndUnfinishedObjects(t *testing.T) {
	now := time.Now()
	obj := func(kind, ns, name, uid string, status any, mod func(*api.Object)) *api.Object {
		o := &api.Object{TypeMeta: api.TypeMeta{Kind: kind}, ObjectMeta: api.ObjectMeta{Namespace: ns, Name: name, UID: uid, Generation: 1}}
		if status != nil {
			b, _ := json.Marshal(status)
			o.SetField("status", b)
		}
		if mod != nil {
			mod(o)
		}
		return o
	}
	ns := obj(api.KindNamespace, "", "soak-a", "ns", nil, nil)
	succeeded := api.InstallationStatus{Phase: api.InstallationSucceeded, ObservedGeneration: 1}
	failed := api.InstallationStatus{Phase: api.InstallationFailed, ObservedGeneration: 1}
	done := api.EventStatus{Worker: api.WorkerStatus{Phase: api.PhaseSucceeded}}
	for _, tc := range []struct {
		name string
		obj  *api.Object
		want string // a part of the one problem expected; "" for none
	}{
		{"installation succeeded", obj(api.KindInstallation, "soak-a", "i", "1", succeeded, nil), ""},
		{"installation failed as its spec says", obj(api.KindInstallation, "soak-a", "i", "1", failed,
			func(o *api.Object) { o.Labels = map[string]string{soakExpect: "Failed"} }), ""},
		{"installation failed, spec says succeed", obj(api.KindInstallation, "soak-a", "i", "1", failed, nil), "not converged: Installation soak-a/i"},
		{"installation behind its generation", obj(api.KindInstallation, "soak-a", "i", "1", succeeded,
			func(o *api.Object) { o.Generation = 2 }), "generation 2 observed 1"},
		{"event succeeded", obj(api.KindEvent, "soak-a", "e", "1", done, nil), ""},
		{"event running", obj(api.KindEvent, "soak-a", "e", "1", api.EventStatus{Worker: api.WorkerStatus{Phase: api.PhaseRunning}}, nil), "worker is RUNNING"},
		{"cleaner left", obj(api.KindCleaner, "soak-a", "c", "1", nil, nil), "Cleaner soak-a/c (uid 1) is still there"},
		{"stuck deleting", obj(api.KindSecret, "soak-a", "s", "1", nil, func(o *api.Object) { o.DeletionTimestamp = &now }), "stuck deleting"},
		{"owner gone", obj(api.KindSecret, "soak-a", "s", "1", nil,
			func(o *api.Object) {
				o.OwnerReferences = []api.OwnerReference{{Kind: api.KindEvent, Name: "e", UID: "gone"}}
			}), "its owners"},
		{"owner there", obj(api.KindSecret, "soak-a", "s", "1", nil,
			func(o *api.Object) {
				o.OwnerReferences = []api.OwnerReference{{Kind: api.KindNamespace, Name: "soak-a", UID: "ns"}}
			}), ""},
		{"namespace gone", obj(api.KindSecret, "tmp-1", "s", "1", nil, nil), "its namespace is gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := unconverged(map[string]*api.Object{"ns": ns, tc.obj.UID: tc.obj})
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("problems %q, want none", got)
			case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
				t.Errorf("problems %q, want one containing %q", got, tc.want)
			}
		})
	}
}

func TestSoakStarts_ReportsAUnitStartedTwice(t *testing.T) {
	log := filepath.Join(t.TempDir(), "starts")
	lines := "worker soak-a/ev-1\njob soak-a/ev-1/a\njob soak-a/ev-1/b\nrun soak-a/inst-1\nworker soak-a/ev-1\n"
	if err := os.WriteFile(log, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	twice, sorts, err := startsTwice(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(twice) != 1 || !strings.Contains(twice[0], `"worker soak-a/ev-1" started 2 times`) {
		t.Errorf("got %q, want the worker of ev-1 started twice", twice)
	}
	if sorts["worker"] != 2 || sorts["job"] != 2 || sorts["run"] != 1 {
		t.Errorf("starts by sort %v, want worker 2, job 2, run 1", sorts)
	}

	u := newUnitRecords("")
	u.seen = map[string]map[string]bool{
		"ev-u1":                     {`{"process":{"pid":1}}`: true, `{"process":{"pid":2}}`: true},
		"ev-u2":                     {`{"process":{"pid":3}}`: true},
		"di-a1-b2-3-1700000000":     {"p4": true},
		"di-a1-b2-3-1700000009":     {"p5": true},
		"di-a1-b2-4-1700000010":     {"p6": true},
		"di-a1-b2-delete-170000001": {"p7": true},
	}
	got, n := u.twice()
	if n != 6 || len(got) != 2 || !strings.Contains(got[0], "deploy item run a1-b2-3 started under 2 unit ids") ||
		!strings.Contains(got[1], "unit ev-u1 was started 2 times") {
		t.Errorf("got %q of %d units, want run a1-b2-3 under 2 ids and ev-u1 started twice", got, n)
	}
}

package cleaner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cleaner/condition"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func testCleaner(ttl time.Duration, monotonic bool, conds ...string) *api.Cleaner {
	return &api.Cleaner{
		ObjectMeta: api.ObjectMeta{Name: "preview-42", Namespace: "default", UID: "c-uid", Generation: 1, CreationTimestamp: t0},
		Spec: api.CleanerSpec{TTL: api.Duration{Duration: ttl},
			Retry: api.CleanerRetry{Period: api.Duration{Duration: time.Hour}, Monotonic: monotonic},
			Targets: []api.CleanerTarget{
				{Name: "inst", Reference: api.TargetReference{Kind: api.KindInstallation, Name: "preview-42"}, Delete: true},
			},
			Conditions: conds},
	}
}

func instVar(labels map[string]any) Resolution {
	return Resolution{
		Vars: map[string]any{"inst": map[string]any{"metadata": map[string]any{"name": "preview-42", "labels": labels}}},
		Found: []Found{{Target: "inst", Kind: api.KindInstallation, Name: "preview-42", UID: "i-uid",
			Delete: true, Evaluated: true}},
	}
}

func TestDecide_FollowsEachBranchOfTheSeed(t *testing.T) {
	closed := `inst.metadata.labels["preview"] == "closed"`
	deadline := t0.Add(30 * time.Hour)
	afterDeadline := `time > timestamp("` + deadline.Format(time.RFC3339) + `")`
	deleting := testCleaner(time.Hour, false, closed)
	deleting.DeletionTimestamp = &t0
	cases := []struct {
		name     string
		cleaner  *api.Cleaner
		now      time.Time
		res      Resolution
		resErr   error
		action   Action
		at       time.Time
		why      string
		phase    api.CleanerPhase
		reason   api.ErrorReason
		resolved bool
		search   string // what status and trace say of a search that found no time
	}{
		{name: "not found: drop", action: ActDrop, now: t0},
		{name: "being deleted: drop", cleaner: deleting, now: t0.Add(2 * time.Hour), action: ActDrop},
		{name: "before the TTL: wait until creation + ttl", cleaner: testCleaner(time.Hour, false, closed),
			now: t0.Add(time.Minute), action: ActWait, at: t0.Add(time.Hour), why: WhyTTL, phase: api.CleanerWaiting},
		{name: "after the TTL, all true: delete", cleaner: testCleaner(time.Hour, false, closed),
			now: t0.Add(time.Hour), res: instVar(map[string]any{"preview": "closed"}), action: ActDelete,
			phase: api.CleanerDeleting, resolved: true},
		{name: "no conditions: delete at the TTL", cleaner: testCleaner(time.Hour, false),
			now: t0.Add(time.Hour), res: instVar(nil), action: ActDelete, phase: api.CleanerDeleting, resolved: true},
		{name: "false: retry after the period", cleaner: testCleaner(time.Hour, false, closed),
			now: t0.Add(2 * time.Hour), res: instVar(map[string]any{"preview": "open"}), action: ActRetry,
			at: t0.Add(3 * time.Hour), why: WhyPeriod, phase: api.CleanerPending, resolved: true},
		{name: "false and monotonic: retry when it becomes true", cleaner: testCleaner(time.Hour, true, afterDeadline),
			now: t0.Add(2 * time.Hour), res: instVar(nil), action: ActRetry, at: deadline.Add(time.Second), why: WhyMonotonic,
			phase: api.CleanerPending, resolved: true},
		{name: "false and monotonic but never true in time: the period", cleaner: testCleaner(time.Hour, true, closed),
			now: t0.Add(2 * time.Hour), res: instVar(map[string]any{"preview": "open"}), action: ActRetry, at: t0.Add(3 * time.Hour), why: WhyPeriod,
			phase: api.CleanerPending, resolved: true, search: "do not all hold within the search horizon of 8760h0m0s"},
		{name: "false and monotonic, failing at a time searched: the period, saying so",
			cleaner: testCleaner(time.Hour, true, `time > timestamp("`+deadline.Format(time.RFC3339)+`") && inst.metadata.labels["x"] == "y"`),
			now:     t0.Add(2 * time.Hour), res: instVar(map[string]any{"preview": "open"}), action: ActRetry, at: t0.Add(3 * time.Hour), why: WhyPeriod,
			phase: api.CleanerPending, resolved: true, search: "a condition failed to evaluate at a time searched"},
		{name: "unresolvable target: failed, retry after a backoff", cleaner: testCleaner(time.Hour, false, closed),
			now: t0.Add(2 * time.Hour), resErr: fmt.Errorf("target inst: %w", ErrUnresolvable), action: ActRetry,
			at: t0.Add(2*time.Hour + FailureBackoffBase), why: WhyBackoff, phase: api.CleanerFailed, reason: api.CleanerReasonUnresolvableTarget},
		{name: "evaluation error: failed, retry after a backoff", cleaner: testCleaner(time.Hour, false, `inst.spec.missing == 1`),
			now: t0.Add(2 * time.Hour), res: instVar(nil), action: ActRetry, at: t0.Add(2*time.Hour + FailureBackoffBase), why: WhyBackoff,
			phase: api.CleanerFailed, reason: api.CleanerReasonEvaluationError, resolved: true},
		{name: "non-boolean result: failed, retry after a backoff", cleaner: testCleaner(time.Hour, false, `inst.metadata.name`),
			now: t0.Add(2 * time.Hour), res: instVar(nil), action: ActRetry, at: t0.Add(2*time.Hour + FailureBackoffBase), why: WhyBackoff,
			phase: api.CleanerFailed, reason: api.CleanerReasonNonBoolean, resolved: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := Input{Now: c.now, Cleaner: c.cleaner, Resolve: func() (Resolution, error) {
				if c.cleaner == nil || c.now.Before(TTLExpiry(c.cleaner)) {
					t.Error("resolved before the TTL")
				}
				return c.res, c.resErr
			}}
			if c.cleaner != nil {
				in.Programs, _, _ = condition.Compile([]string{"inst"}, c.cleaner.Spec.Conditions)
			}
			d := Decide(context.Background(), in)
			if d.Action != c.action || !d.At.Equal(c.at) || d.Why != c.why || d.Phase != c.phase {
				t.Fatalf("decision = %s at %s (%s) phase %s; want %s at %s (%s) phase %s",
					d.Action, d.At, d.Why, d.Phase, c.action, c.at, c.why, c.phase)
			}
			if (d.LastError == nil) != (c.reason == "") || d.LastError != nil && d.LastError.Reason != c.reason {
				t.Fatalf("lastError = %+v, want reason %q", d.LastError, c.reason)
			}
			if !strings.Contains(d.Search, c.search) || (c.search == "") != (d.Search == "") {
				t.Fatalf("search = %q, want it to say %q", d.Search, c.search)
			}
			if c.resolved && strings.Join(d.Resolution.Resolved(), ",") != "Installation/preview-42" {
				t.Fatalf("resolved = %v", d.Resolution.Resolved())
			}
		})
	}
}

func TestDecide_ProgramsThatDoNotCompileFailTheCleaner(t *testing.T) {
	d := Decide(context.Background(), Input{Now: t0.Add(2 * time.Hour), Cleaner: testCleaner(time.Hour, false),
		ProgramsErr: errors.New("condition 0: undeclared reference"),
		Resolve:     func() (Resolution, error) { t.Fatal("resolved"); return Resolution{}, nil }})
	if d.Action != ActRetry || d.Phase != api.CleanerFailed || d.LastError.Reason != api.CleanerReasonInvalidSpec {
		t.Fatalf("decision %+v", d)
	}
}

// mapSource is a Source over a map of objects by "Kind/ns/name".
type mapSource struct {
	objs map[string]*api.Object
	bad  string // a kind that cannot be read
}

func (m mapSource) Get(kind, ns, name string) (*api.Object, bool, error) {
	if kind == m.bad {
		return nil, false, ErrUnresolvable
	}
	o, ok := m.objs[kind+"/"+ns+"/"+name]
	return o, ok, nil
}

func (m mapSource) Select(kind, ns string, labels map[string]string) ([]*api.Object, error) {
	if kind == m.bad {
		return nil, ErrUnresolvable
	}
	var out []*api.Object
	for _, o := range m.objs {
		if o.Kind == kind && o.Namespace == ns && matches(labels, o.Labels) {
			out = append(out, o)
		}
	}
	sortByName(out)
	return out, nil
}

// LastChange is the object's LastChangeTime with nothing observed.
func (m mapSource) LastChange(kind string, o *api.Object) time.Time {
	return LastChangeTime(o, time.Time{}, time.Time{})
}

func object(kind, name, uid string, labels map[string]string) *api.Object {
	return &api.Object{TypeMeta: api.TypeMeta{Kind: kind},
		ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default", UID: uid, Labels: labels}}
}

func TestResolve_NamedSelectedMissingAndSecretTargets(t *testing.T) {
	no := false
	c := testCleaner(0, false)
	c.Spec.Targets = []api.CleanerTarget{
		{Name: "inst", Reference: api.TargetReference{Kind: api.KindInstallation, Name: "preview-42"}, Delete: true},
		{Name: "gone", Reference: api.TargetReference{Kind: api.KindInstallation, Name: "nothing"}},
		{Name: "secrets", Reference: api.TargetReference{Kind: api.KindSecret, MatchLabels: map[string]string{"preview": "42"}}, Delete: true},
		{Name: "quiet", Reference: api.TargetReference{Kind: api.KindDataObject, Name: "d"}, Delete: true, IncludeWhenEvaluating: &no},
	}
	s1 := object(api.KindSecret, "s1", "s1-uid", map[string]string{"preview": "42"})
	s1.SetField("data", []byte(`{"password":"aHVudGVyMg=="}`))
	src := mapSource{objs: map[string]*api.Object{
		"Installation/default/preview-42": object(api.KindInstallation, "preview-42", "i-uid", nil),
		"Secret/default/s1":               s1,
		"Secret/default/s2":               object(api.KindSecret, "s2", "s2-uid", map[string]string{"preview": "43"}),
		"DataObject/default/d":            object(api.KindDataObject, "d", "d-uid", nil),
	}}
	res, err := Resolve(c, src)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.Resolved(), ","); got != "Installation/preview-42,Secret/s1" {
		t.Errorf("resolved = %s", got)
	}
	var del []string
	for _, f := range res.ToDelete() {
		del = append(del, f.Ref()+"@"+f.UID)
	}
	if got := strings.Join(del, ","); got != "Installation/preview-42@i-uid,Secret/s1@s1-uid,DataObject/d@d-uid" {
		t.Errorf("to delete = %s", got)
	}
	if v, ok := res.Vars["gone"]; !ok || v != nil {
		t.Errorf("missing named target = %v, %v; want null", v, ok)
	}
	if _, ok := res.Vars["quiet"]; ok {
		t.Error("a target not evaluated is a variable")
	}
	items := res.Vars["secrets"].(map[string]any)["items"].([]any)
	data := items[0].(map[string]any)["data"].(map[string]any)
	if len(items) != 1 || data["password"] != Redacted {
		t.Errorf("secrets = %v, want one with its value redacted", items)
	}
	src.bad = api.KindSecret
	if _, err := Resolve(c, src); !errors.Is(err, ErrUnresolvable) || !strings.Contains(err.Error(), "target secrets") {
		t.Errorf("unreadable kind: %v", err)
	}
}

func TestValue_IsTheObjectsJSON(t *testing.T) {
	del := t0.Add(time.Hour)
	o := object(api.KindInstallation, "preview-42", "i-uid", map[string]string{"preview": "42"})
	o.APIVersion, o.ResourceVersion, o.Generation, o.CreationTimestamp = api.APIVersion, "17", 3, t0.Add(123456789)
	o.DeletionTimestamp, o.GenerateName = &del, "preview-"
	o.Annotations = map[string]string{"a": "b"}
	o.Finalizers = []string{api.FinalizerCascadeDeletion}
	o.OwnerReferences = []api.OwnerReference{{APIVersion: api.APIVersion, Kind: "Project", Name: "p", UID: "p-uid", Controller: true}, {Kind: "X", Name: "x", UID: "x"}}
	o.SetField("spec", []byte(`{"blueprint":{"ref":"bp"},"n":2,"list":[1,"a",null,{"b":true}]}`))
	o.SetField("status", []byte(`{"phase":"Succeeded"}`))
	got, err := Value(api.KindInstallation, o)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(o)
	var want map[string]any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	// Whole numbers are int64s, as the schemas type integers.
	want["metadata"].(map[string]any)["generation"] = int64(3)
	want["spec"].(map[string]any)["n"] = int64(2)
	want["spec"].(map[string]any)["list"].([]any)[0] = int64(1)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Value = %v\nwant    %v", got, want)
	}
}

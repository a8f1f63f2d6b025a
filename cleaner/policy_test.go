package cleaner

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cleaner/condition"
)

func TestOverCapacity_DeletesTheOldestLiveBeyondMaxSparingKeptOnes(t *testing.T) {
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	item := func(name string, h int) CapacityItem {
		return CapacityItem{Name: name, UID: name + "-uid", Created: at(h)}
	}
	kept := func(it CapacityItem) CapacityItem { it.Keep = true; return it }
	deleting := func(it CapacityItem) CapacityItem { it.Deleting = true; return it }
	names := func(its []CapacityItem) string {
		var out []string
		for _, it := range its {
			out = append(out, it.Name)
		}
		return strings.Join(out, ",")
	}
	cases := []struct {
		name       string
		items      []CapacityItem
		max        int
		del, spare string
	}{
		{"under the max", []CapacityItem{item("a", 1), item("b", 2)}, 3, "", ""},
		{"at the max", []CapacityItem{item("a", 1), item("b", 2)}, 2, "", ""},
		{"the oldest beyond the max, in any input order", []CapacityItem{item("c", 3), item("a", 1), item("d", 4), item("b", 2)}, 2, "a,b", ""},
		{"ties by name", []CapacityItem{item("b", 1), item("a", 1), item("c", 2)}, 2, "a", ""},
		{"a kept one counts and stays; the next oldest goes", []CapacityItem{kept(item("a", 1)), item("b", 2), item("c", 3)}, 2, "b", "a"},
		{"only kept ones beyond: nothing deleted", []CapacityItem{kept(item("a", 1)), kept(item("b", 2)), item("c", 3)}, 1, "c", "a,b"},
		{"deleting ones do not count", []CapacityItem{deleting(item("a", 1)), item("b", 2), item("c", 3)}, 2, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			del, spare := OverCapacity(c.items, c.max)
			if names(del) != c.del || names(spare) != c.spare {
				t.Fatalf("deleted %q kept %q; want deleted %q kept %q", names(del), names(spare), c.del, c.spare)
			}
		})
	}
}

func TestLastChangeTime_IsTheLatestWriteCairnKnowsOf(t *testing.T) {
	mf := func(h int, sub string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: "m", Subresource: sub, Time: &metav1.Time{Time: t0.Add(time.Duration(h) * time.Hour)}}
	}
	obj := func(entries ...metav1.ManagedFieldsEntry) *api.Object {
		return &api.Object{ObjectMeta: api.ObjectMeta{CreationTimestamp: t0, ManagedFields: entries}}
	}
	h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
	cases := []struct {
		name            string
		o               *api.Object
		observed, since time.Time
		want            time.Time
	}{
		{"never changed, watched since before its creation", obj(), time.Time{}, t0.Add(-time.Hour), t0},
		{"a change observed", obj(), h(5), t0, h(5)},
		{"untracked and watched since after its creation: no earlier than that", obj(), time.Time{}, h(3), h(3)},
		{"managed fields: their latest write", obj(mf(2, ""), mf(7, "")), time.Time{}, h(9), h(7)},
		{"managed fields of the status do not count", obj(mf(2, ""), mf(8, "status")), time.Time{}, t0, h(2)},
		{"a change observed after the managed fields", obj(mf(2, "")), h(4), t0, h(4)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := LastChangeTime(c.o, c.observed, c.since); !got.Equal(c.want) {
				t.Fatalf("LastChangeTime = %s, want %s", got, c.want)
			}
		})
	}
}

func TestFailureBackoff_GrowsFromSecondsToMinutesWithinThePeriod(t *testing.T) {
	cases := []struct {
		failures int
		period   time.Duration
		want     time.Duration
	}{
		{1, time.Hour, 5 * time.Second},
		{2, time.Hour, 10 * time.Second},
		{5, time.Hour, 80 * time.Second},
		{8, time.Hour, 10 * time.Minute}, // 640 s, capped
		{100, time.Hour, 10 * time.Minute},
		{3, 15 * time.Second, 15 * time.Second}, // never beyond retry.period
	}
	for _, c := range cases {
		if got := FailureBackoff(c.failures, c.period); got != c.want {
			t.Errorf("FailureBackoff(%d, %s) = %s, want %s", c.failures, c.period, got, c.want)
		}
	}
}

func TestNewlyWouldDelete_AnnouncesEachObjectOnce(t *testing.T) {
	if got := newlyWouldDelete([]string{"Secret/a"}, []string{"Secret/a", "Secret/b"}); !reflect.DeepEqual(got, []string{"Secret/b"}) {
		t.Fatalf("newlyWouldDelete = %v", got)
	}
	if got := newlyWouldDelete([]string{"Secret/a"}, []string{"Secret/a"}); got != nil {
		t.Fatalf("newlyWouldDelete of the same = %v", got)
	}
}

func TestDecide_BacksOffLongerAfterEachFailureInARow(t *testing.T) {
	c := testCleaner(0, false, `inst.metadata.labels["missing"] == "x"`)
	c.Status.ConsecutiveFailures = 3
	set, _, _ := condition.Compile([]string{"inst"}, c.Spec.Conditions)
	now := t0.Add(time.Hour)
	d := Decide(context.Background(), Input{Now: now, Cleaner: c, Programs: set,
		Resolve: func() (Resolution, error) { return instVar(nil), nil }})
	if d.Failures != 4 || !d.At.Equal(now.Add(40*time.Second)) || d.Why != WhyBackoff {
		t.Fatalf("decision: failures %d, next at %s (%s); want the 4th failure, 40s later", d.Failures, d.At, d.Why)
	}
	c.Status.ConsecutiveFailures = 0
	c.Spec.Conditions = []string{"true"}
	set, _, _ = condition.Compile([]string{"inst"}, c.Spec.Conditions)
	if d := Decide(context.Background(), Input{Now: now, Cleaner: c, Programs: set,
		Resolve: func() (Resolution, error) { return instVar(nil), nil }}); d.Failures != 0 {
		t.Fatalf("a successful evaluation leaves failures at %d", d.Failures)
	}
}

// policyCleaner is testCleaner (one Installation target marked delete,
// conditions all true) with its spec changed by f.
func policyCleaner(f func(*api.CleanerSpec)) *api.Cleaner {
	c := testCleaner(0, false, `inst.metadata.name == "preview-42"`)
	f(&c.Spec)
	return c
}

func TestDecide_AppliesTheKeepAnnotationDryRunsAndCapacity(t *testing.T) {
	now := t0.Add(time.Hour)
	capOf := func(max int) *api.CleanerCapacity {
		return &api.CleanerCapacity{Max: max, Selector: api.CapacitySelector{Kind: api.KindInstallation}}
	}
	withCapacity := func(res Resolution, max int, items ...CapacityItem) Resolution {
		res.CapacityKind, res.CapacityMax, res.Capacity = api.KindInstallation, max, items
		return res
	}
	kept := instVar(nil)
	kept.Found[0].Keep = true
	old := CapacityItem{Name: "old", UID: "o", Created: t0}
	mid := CapacityItem{Name: "mid", UID: "m", Created: t0.Add(time.Minute)}
	cases := []struct {
		name        string
		cleaner     *api.Cleaner
		res         Resolution
		action      Action
		why         string
		toDelete    string // the targets a deletion takes
		capacity    string // the objects beyond capacity deleted now
		wouldDelete []string
		kept        []string
	}{
		{name: "plain: delete", cleaner: policyCleaner(func(*api.CleanerSpec) {}), res: instVar(nil), action: ActDelete,
			toDelete: "Installation/preview-42"},
		{name: "a kept target: the Cleaner goes, the target stays", cleaner: policyCleaner(func(*api.CleanerSpec) {}), res: kept,
			action: ActDelete, kept: []string{"Installation/preview-42"}},
		{name: "dry run: nothing deleted, what would be is recorded", cleaner: policyCleaner(func(s *api.CleanerSpec) { s.DryRun = true }),
			res: instVar(nil), action: ActRetry, why: WhyDryRun, toDelete: "Installation/preview-42", wouldDelete: []string{"Installation/preview-42"}},
		{name: "capacity: the oldest beyond it go while the conditions are false",
			cleaner: policyCleaner(func(s *api.CleanerSpec) { s.Capacity, s.Conditions = capOf(1), []string{"false"} }),
			res:     withCapacity(instVar(nil), 1, mid, old), action: ActRetry, why: WhyPeriod, toDelete: "Installation/preview-42",
			capacity: "Installation/old"},
		{name: "capacity and no conditions: a standing rule, never deleted",
			cleaner: policyCleaner(func(s *api.CleanerSpec) { s.Capacity, s.Conditions, s.Targets = capOf(1), nil, nil }),
			res:     withCapacity(Resolution{}, 1, mid, old), action: ActRetry, why: WhyStanding, capacity: "Installation/old"},
		{name: "capacity in a dry run: recorded, not deleted",
			cleaner: policyCleaner(func(s *api.CleanerSpec) { s.Capacity, s.Conditions, s.DryRun = capOf(1), []string{"false"}, true }),
			res:     withCapacity(instVar(nil), 1, mid, old), action: ActRetry, why: WhyPeriod, toDelete: "Installation/preview-42",
			wouldDelete: []string{"Installation/old"}},
		{name: "capacity sparing a kept object",
			cleaner: policyCleaner(func(s *api.CleanerSpec) { s.Capacity, s.Conditions = capOf(1), []string{"false"} }),
			res:     withCapacity(instVar(nil), 1, CapacityItem{Name: "old", UID: "o", Created: t0, Keep: true}, mid), action: ActRetry,
			why: WhyPeriod, toDelete: "Installation/preview-42", capacity: "Installation/mid", kept: []string{"Installation/old"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set, issues, err := condition.Compile([]string{"inst"}, c.cleaner.Spec.Conditions)
			if err != nil || issues != nil {
				t.Fatal(issues, err)
			}
			d := Decide(context.Background(), Input{Now: now, Cleaner: c.cleaner, Programs: set,
				Resolve: func() (Resolution, error) { return c.res, nil }})
			if d.Action != c.action || (c.why != "" && d.Why != c.why) {
				t.Fatalf("decision %s (%s), want %s (%s)", d.Action, d.Why, c.action, c.why)
			}
			if got := strings.Join(refsOf(d.Resolution.ToDelete()), ","); got != c.toDelete {
				t.Errorf("targets to delete %q, want %q", got, c.toDelete)
			}
			if got := strings.Join(refsOf(d.Capacity), ","); got != c.capacity {
				t.Errorf("capacity deletes %q, want %q", got, c.capacity)
			}
			if !reflect.DeepEqual(d.WouldDelete, c.wouldDelete) || !reflect.DeepEqual(d.Kept, c.kept) {
				t.Errorf("wouldDelete %v kept %v; want %v and %v", d.WouldDelete, d.Kept, c.wouldDelete, c.kept)
			}
		})
	}
}

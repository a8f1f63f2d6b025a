package scheduler_test

import (
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/scheduler"
)

// queue builds items "project/n" created in the order given.
func queue(keys ...string) []scheduler.Item {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out []scheduler.Item
	for i, k := range keys {
		p, _, _ := strings.Cut(k, "/")
		out = append(out, scheduler.Item{Key: k, Project: p, Created: t0.Add(time.Duration(i) * time.Second)})
	}
	return out
}

func keys(items []scheduler.Item) string {
	var s []string
	for _, it := range items {
		s = append(s, it.Key)
	}
	return strings.Join(s, ",")
}

func TestChoose_FIFOWithinAProjectFairAcrossProjectsWithinCapacity(t *testing.T) {
	for _, tc := range []struct {
		name    string
		queue   []scheduler.Item
		running map[string]int
		cap     scheduler.Capacity
		want    string
	}{
		{"fifo within a project", queue("a/1", "a/2", "a/3"), nil, scheduler.Capacity{Global: 2}, "a/1,a/2"},
		{"no global limit", queue("a/1", "a/2"), nil, scheduler.Capacity{}, "a/1,a/2"},
		{"global limit full", queue("a/1"), map[string]int{"b": 2}, scheduler.Capacity{Global: 2}, ""},
		{"alternates across projects", queue("a/1", "a/2", "a/3", "b/1", "b/2"), nil, scheduler.Capacity{Global: 4}, "a/1,b/1,a/2,b/2"},
		{"the least loaded project first", queue("a/1", "b/1"), map[string]int{"a": 3}, scheduler.Capacity{Global: 4}, "b/1"},
		{"a project's own limit", queue("a/1", "a/2", "a/3", "b/1"), nil,
			scheduler.Capacity{Global: 10, PerProject: map[string]int{"a": 2}}, "a/1,b/1,a/2"},
		{"a full project does not block others", queue("a/1", "b/1"), map[string]int{"a": 1},
			scheduler.Capacity{Global: 10, PerProject: map[string]int{"a": 1}}, "b/1"},
		{"empty queue", nil, nil, scheduler.Capacity{Global: 1}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := scheduler.Choose(tc.queue, tc.running, tc.cap)
			if keys(got) != tc.want {
				t.Fatalf("Choose = %s, want %s", keys(got), tc.want)
			}
		})
	}
}

func TestChoose_SaysWhichLimitHoldsEachWaitingItemAndItsPlace(t *testing.T) {
	_, waiting := scheduler.Choose(queue("a/1", "a/2", "a/3", "b/1", "b/2"), map[string]int{"b": 1},
		scheduler.Capacity{Global: 3, PerProject: map[string]int{"b": 1}})
	// a/1 and a/2 start (b is full); a/3 waits for the global limit.
	for key, want := range map[string]scheduler.Wait{
		"a/3": {Limit: "global", Running: 3, Max: 3, Position: 1, Queued: 1},
		"b/1": {Limit: "project", Running: 1, Max: 1, Position: 1, Queued: 2},
		"b/2": {Limit: "project", Running: 1, Max: 1, Position: 2, Queued: 2},
	} {
		if got := waiting[key]; got != want {
			t.Errorf("%s waits %+v, want %+v", key, got, want)
		}
	}
	if len(waiting) != 3 {
		t.Errorf("waiting = %v, want 3 entries", waiting)
	}
	if s := waiting["b/2"].String(); !strings.Contains(s, "its project's limit (1 of 1 running)") || !strings.Contains(s, "place 2 of 2") {
		t.Errorf("b/2 says %q", s)
	}
}

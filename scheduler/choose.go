// Package scheduler runs the workers and jobs of Events on the runtime, as
// the seed's scenarios say: the scheduler takes PENDING events from the
// store (the queue), within the global and per-project capacities, FIFO
// within a project and fair across projects, and claims each by a
// compare-and-swap PENDING → STARTING; the observer starts what was
// claimed, follows each unit, writes the worker's and jobs' phases (404:
// presumed deleted; 409: already terminal, treated as canceled or aborted),
// kills what was canceled, aborted or timed out, and cleans the runtime up
// at once or after a grace period.
//
// The decisions are plain functions (Choose, DecideWorker, DecideJob) with
// table tests; the controller around them only reads, calls and writes.
package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Item is one entry of a queue: a PENDING worker (Key "ns/name") or a
// PENDING job (Key "ns/name/job").
type Item struct {
	Key string
	// Project is "ns/project": capacities are per project.
	Project string
	// Created orders the queue (FIFO); Key breaks ties.
	Created time.Time
}

// Capacity is what may run at once: Global over every project (0: no
// limit), and per project (a missing or 0 entry: only the global limit).
type Capacity struct {
	Global     int
	PerProject map[string]int
}

// Wait says why an item was not chosen: the limit that holds it (the
// global one, or its project's), how full it is, and its place in its
// project's queue (1 is next).
type Wait struct {
	// Limit is "global" or "project".
	Limit    string
	Running  int
	Max      int
	Position int
	Queued   int
}

// String says it for people: "waiting for capacity: the global limit
// (16 of 16 running); 3rd of 7 in its project's queue".
func (w Wait) String() string {
	limit := fmt.Sprintf("the global limit (%d of %d running)", w.Running, w.Max)
	if w.Limit == "project" {
		limit = fmt.Sprintf("its project's limit (%d of %d running)", w.Running, w.Max)
	}
	return fmt.Sprintf("waiting for capacity: %s; place %d of %d in its project's queue", limit, w.Position, w.Queued)
}

// Choose picks the items of queue to start now, given what runs already
// (running, per project; its sum is what runs globally) and the capacity:
// within a project the oldest first (FIFO), across projects the project
// running the fewest first (ties: the one whose next item is oldest, then
// its name), one item at a time, until the global capacity is used or no
// project may start more. It returns the chosen items in the order to
// start them and, for every other item, why it waits. It does not modify
// its arguments.
func Choose(queue []Item, running map[string]int, c Capacity) (start []Item, waiting map[string]Wait) {
	byProject := map[string][]Item{}
	for _, it := range queue {
		byProject[it.Project] = append(byProject[it.Project], it)
	}
	projects := make([]string, 0, len(byProject))
	for p, items := range byProject {
		slices.SortFunc(items, func(a, b Item) int {
			return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Key, b.Key))
		})
		projects = append(projects, p)
	}
	slices.Sort(projects)
	load := map[string]int{}
	total := 0
	for p, n := range running {
		load[p] = n
		total += n
	}
	next := map[string]int{} // index of each project's next item
	full := func(p string) bool {
		max := c.PerProject[p]
		return max > 0 && load[p] >= max
	}
	for c.Global <= 0 || total < c.Global {
		best := ""
		for _, p := range projects {
			if next[p] >= len(byProject[p]) || full(p) {
				continue
			}
			if best == "" || load[p] < load[best] ||
				(load[p] == load[best] && byProject[p][next[p]].Created.Before(byProject[best][next[best]].Created)) {
				best = p
			}
		}
		if best == "" {
			break
		}
		start = append(start, byProject[best][next[best]])
		next[best]++
		load[best]++
		total++
	}
	waiting = map[string]Wait{}
	for _, p := range projects {
		rest := byProject[p][next[p]:]
		for i, it := range rest {
			w := Wait{Limit: "global", Running: total, Max: c.Global, Position: i + 1, Queued: len(rest)}
			if full(p) {
				w.Limit, w.Running, w.Max = "project", load[p], c.PerProject[p]
			}
			waiting[it.Key] = w
		}
	}
	return start, waiting
}

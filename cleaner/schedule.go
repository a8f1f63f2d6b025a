package cleaner

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// Schedule is the Cleaners' evaluation times: an in-memory min-heap of
// keys by time, with one entry per key (setting a key again moves it), so
// it holds millions of entries with O(log n) Set, Remove and Pop. Run
// hands every key whose time has come to a function (the controller's
// queue). Its methods are safe for concurrent use.
type Schedule struct {
	mu    sync.Mutex
	h     entries
	byKey map[string]*entry
	// wake is signalled when the earliest time may have moved earlier.
	wake chan struct{}
}

type entry struct {
	key   string
	at    int64 // Unix nanoseconds
	index int
}

// entries is the heap, ordered by time then key.
type entries []*entry

func (h entries) Len() int { return len(h) }
func (h entries) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].key < h[j].key
}
func (h entries) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *entries) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *entries) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return e
}

// NewSchedule returns an empty schedule.
func NewSchedule() *Schedule {
	return &Schedule{byKey: map[string]*entry{}, wake: make(chan struct{}, 1)}
}

// Set schedules key at at, replacing its earlier time if any. O(log n); it
// never blocks for long.
func (s *Schedule) Set(key string, at time.Time) {
	ns := at.UnixNano()
	s.mu.Lock()
	e, ok := s.byKey[key]
	switch {
	case !ok:
		e = &entry{key: key, at: ns}
		s.byKey[key] = e
		heap.Push(&s.h, e)
	case e.at != ns:
		e.at = ns
		heap.Fix(&s.h, e.index)
	}
	first := s.h[0] == e
	s.mu.Unlock()
	if first {
		s.signal()
	}
}

// Remove unschedules key (nothing when it is not scheduled). O(log n).
func (s *Schedule) Remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byKey[key]; ok {
		heap.Remove(&s.h, e.index)
		delete(s.byKey, key)
	}
}

// When returns key's scheduled time.
func (s *Schedule) When(key string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byKey[key]; ok {
		return time.Unix(0, e.at), true
	}
	return time.Time{}, false
}

// Len returns the number of scheduled keys.
func (s *Schedule) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.h)
}

// Next returns the earliest scheduled time, or false when empty.
func (s *Schedule) Next() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.h) == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, s.h[0].at), true
}

// PopDue removes and returns, earliest first, up to max keys (max <= 0:
// all) whose time is at or before now. O(k log n) for k keys.
func (s *Schedule) PopDue(now time.Time, max int) []string {
	ns := now.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for len(s.h) > 0 && s.h[0].at <= ns && (max <= 0 || len(out) < max) {
		e := heap.Pop(&s.h).(*entry)
		delete(s.byKey, e.key)
		out = append(out, e.key)
	}
	return out
}

func (s *Schedule) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// popBatch bounds the keys Run hands over per lock hold, so Set is never
// kept waiting behind a large batch.
const popBatch = 1024

// Run calls fire for every key whose time comes, at that time (the key
// leaves the schedule then), until ctx is done. It blocks; it sleeps until
// the earliest time, waking earlier when Set moves that time earlier.
// fire must be quick (enqueue the key).
func (s *Schedule) Run(ctx context.Context, fire func(key string)) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		for {
			keys := s.PopDue(time.Now(), popBatch)
			for _, k := range keys {
				fire(k)
			}
			if len(keys) < popBatch {
				break
			}
		}
		wait := time.Hour
		if next, ok := s.Next(); ok {
			wait = max(time.Until(next), 0)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

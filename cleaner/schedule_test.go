package cleaner

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/internal/testkit"
)

func TestSchedule_PopsDueKeysEarliestFirstOncePerKey(t *testing.T) {
	s := NewSchedule()
	s.Set("c", t0.Add(3*time.Second))
	s.Set("a", t0.Add(1*time.Second))
	s.Set("b", t0.Add(5*time.Second))
	s.Set("b", t0.Add(2*time.Second)) // moved earlier
	s.Set("d", t0.Add(time.Hour))
	s.Set("d", t0.Add(2*time.Hour)) // moved later
	s.Set("e", t0)
	s.Remove("e")
	s.Remove("nothing")
	if s.Len() != 4 {
		t.Fatalf("len = %d, want 4 (one entry per key)", s.Len())
	}
	if at, ok := s.When("b"); !ok || !at.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("When(b) = %s, %v", at, ok)
	}
	if next, _ := s.Next(); !next.Equal(t0.Add(time.Second)) {
		t.Fatalf("next = %s", next)
	}
	if got := s.PopDue(t0.Add(3*time.Second), 0); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("due = %v, want a b c", got)
	}
	if got := s.PopDue(t0.Add(time.Hour), 0); len(got) != 0 {
		t.Fatalf("due = %v, want none (d moved later)", got)
	}
	if got := s.PopDue(t0.Add(2*time.Hour), 0); !slices.Equal(got, []string{"d"}) || s.Len() != 0 {
		t.Fatalf("due = %v, len %d", got, s.Len())
	}
}

func TestSchedule_RunFiresEachKeyAtItsTimeAndWakesForEarlierOnes(t *testing.T) {
	s := NewSchedule()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var fired []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx, func(k string) { mu.Lock(); fired = append(fired, k); mu.Unlock() })
	}()
	defer func() { cancel(); <-done }()
	s.Set("late", time.Now().Add(time.Hour))
	s.Set("soon", time.Now().Add(50*time.Millisecond)) // earlier than what Run sleeps for
	s.Set("now", time.Now())
	testkit.Eventually(t, 30*time.Second, "soon and now fired", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(fired) == 2
	})
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(fired, []string{"now", "soon"}) || s.Len() != 1 {
		t.Fatalf("fired %v, %d left; want now, soon and late still scheduled", fired, s.Len())
	}
}

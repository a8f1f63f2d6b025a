package watchcache

import (
	"testing"
	"time"
)

// TestLiveness_AsksWhenQuietAndDiesWhenUnanswered walks a watch through
// quiet, asked, answered and dead.
func TestLiveness_AsksWhenQuietAndDiesWhenUnanswered(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const timeout = 4 * time.Second
	l := newLiveness(timeout, t0)
	steps := []struct {
		at        time.Duration
		hear      bool
		ask, dead bool
	}{
		{at: time.Second},                             // quiet, but not for long
		{at: 2 * time.Second, ask: true},              // quiet for half the timeout: ask
		{at: 3 * time.Second, ask: true},              // still unanswered: ask again
		{at: 3500 * time.Millisecond, hear: true},     // etcd answers
		{at: 5 * time.Second},                         // quiet again, not for long
		{at: 6 * time.Second, ask: true},              // asked at 6s
		{at: 9 * time.Second, ask: true},              // unanswered for 3s
		{at: 10 * time.Second, ask: true, dead: true}, // unanswered for the timeout: dead
		{at: 11 * time.Second, ask: true, dead: true}, // and stays so
	}
	for _, s := range steps {
		now := t0.Add(s.at)
		if s.hear {
			l.hear(now)
			continue
		}
		ask, dead := l.check(now)
		if ask != s.ask || dead != s.dead {
			t.Fatalf("at %s: ask %v dead %v, want %v %v", s.at, ask, dead, s.ask, s.dead)
		}
	}
}

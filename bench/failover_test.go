package bench

import (
	"fmt"
	"testing"
	"time"

	"cairn.dev/cairn/internal/testkit/failovertest"
)

// BenchmarkControllerFailover: two controller managers over one API server
// (each with its own informers and garbage collector, kept warm while it
// waits); the leader dies (its client is cut) and a namespace is deleted
// at that moment. Reports, against the number of objects in the store:
//
//   - s/failover: from the death to the survivor's first action (the first
//     object of the namespace its collector deleted), the figure that must
//     stay within the lease duration (5s) plus a second;
//   - s/takeover: from the death to the start of the survivor's
//     acquisition of the Lease (lease timing alone: between the lease
//     duration minus and plus a fraction of the retry period, by where in
//     the renewal period the leader died);
//   - s/act: from that acquisition to the first action (warm standby);
//   - s/warm: until both managers' graphs held every object, at start.
//
// s/failover, s/takeover, s/act and s/warm are means over the iterations;
// s/failover-max and s/act-max the slowest.
//
// The per-term-graph variants run the collector without its standby part:
// the new leader builds its graph from the (warm) informer caches first.
// Run with -benchtime 1x; each iteration fills a fresh store.
func BenchmarkControllerFailover(b *testing.B) {
	for _, tc := range []struct {
		objects int
		perTerm bool
	}{{10_000, false}, {100_000, false}, {10_000, true}, {100_000, true}} {
		name := fmt.Sprintf("objects=%d", tc.objects)
		if tc.perTerm {
			name += "/per-term-graph"
		}
		b.Run(name, func(b *testing.B) {
			var sum failovertest.Result
			var worstFailover, worstAct time.Duration
			for range b.N {
				res := failovertest.Run(b, failovertest.Options{Objects: tc.objects, LeaseDuration: 5 * time.Second,
					PerTermGraph: tc.perTerm})
				b.Logf("%d objects: populated in %s, warm in %s; takeover %s, first action %s",
					tc.objects, res.Populate.Round(time.Millisecond), res.Warm.Round(time.Millisecond),
					res.Takeover.Round(time.Millisecond), res.Failover.Round(time.Millisecond))
				sum.Failover += res.Failover
				sum.Takeover += res.Takeover
				sum.Warm += res.Warm
				worstFailover = max(worstFailover, res.Failover)
				worstAct = max(worstAct, res.Failover-res.Takeover)
			}
			n := float64(b.N)
			b.ReportMetric(sum.Failover.Seconds()/n, "s/failover")
			b.ReportMetric(worstFailover.Seconds(), "s/failover-max")
			b.ReportMetric(sum.Takeover.Seconds()/n, "s/takeover")
			b.ReportMetric((sum.Failover-sum.Takeover).Seconds()/n, "s/act")
			b.ReportMetric(worstAct.Seconds(), "s/act-max")
			b.ReportMetric(sum.Warm.Seconds()/n, "s/warm")
		})
	}
}

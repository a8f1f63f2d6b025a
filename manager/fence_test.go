package manager_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/client/local"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/server/servertest"
)

// write is one write a probe made: in which term, at which revision.
type write struct {
	term int
	rv   int64
}

// probe is a controller that writes its Secret every 20ms through the
// term's client, and records what came of each write.
type probe struct {
	id string

	mu        sync.Mutex
	ok        []write
	notLeader []error
}

func (p *probe) controller() manager.Controller {
	return manager.Controller{Name: "probe", Setup: func(t *manager.Term) error {
		t.Add("probe", manager.RunnableFunc(func(ctx context.Context) error {
			for n := 0; ; n++ {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(20 * time.Millisecond):
				}
				s := testkit.Secret("default", "probe-"+p.id, nil, testkit.Labels("n", strconv.Itoa(n)))
				out, err := t.Client.Create(ctx, s)
				if errors.Is(err, api.ErrAlreadyExists) {
					cur, gerr := t.Client.Get(ctx, api.KindSecret, "default", s.Name)
					if gerr != nil {
						continue
					}
					cur.Labels = s.Labels
					out, err = t.Client.Update(ctx, cur)
				}
				p.record(t.Fence.Term, out, err)
			}
		}))
		return nil
	}}
}

func (p *probe) record(term int, out *api.Object, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err == nil:
		rv, _ := strconv.ParseInt(out.ResourceVersion, 10, 64)
		p.ok = append(p.ok, write{term, rv})
	case api.IsNotLeader(err):
		p.notLeader = append(p.notLeader, err)
	}
}

func (p *probe) snapshot() (ok []write, notLeader []error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]write(nil), p.ok...), append([]error(nil), p.notLeader...)
}

// TestManager_StaleLeadersWritesAreRefusedAndItStepsDownAtOnce: manager a
// leads; its Lease is revoked (released by hand, just after a renewal, so
// that a's own renewal would not notice for seconds) while a still
// believes it leads. a's next controller write is refused as NotLeader,
// nothing a writes after the revocation commits, a steps down at once;
// b takes over and its writes commit. In-process and over HTTP.
func TestManager_StaleLeadersWritesAreRefusedAndItStepsDownAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(t *testing.T, srv *servertest.Server) client.Interface
	}{
		{"in-process", func(_ *testing.T, srv *servertest.Server) client.Interface {
			return local.New(srv.Registry, identity.System())
		}},
		{"over HTTP", func(t *testing.T, srv *servertest.Server) client.Interface { return srv.Client(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := servertest.Start(t)
			// A long lease: renewals 4s apart, so only the fence can stop a
			// within the first seconds after the revocation.
			const duration = 20 * time.Second
			pa, pb := &probe{id: "a"}, &probe{id: "b"}
			regA := prometheus.NewRegistry()
			a, err := manager.New(manager.Options{Client: tc.client(t, srv), Identity: "http://a", LeaderElection: true,
				LeaseDuration: duration, Logger: quiet(), Metrics: regA, Controllers: []manager.Controller{pa.controller()}})
			if err != nil {
				t.Fatal(err)
			}
			startManager(t, a)
			testkit.Eventually(t, 20*time.Second, "a leads and writes", func() bool {
				ok, _ := pa.snapshot()
				return a.Leading() && len(ok) > 0
			})
			b, err := manager.New(manager.Options{Client: tc.client(t, srv), Identity: "http://b", LeaderElection: true,
				LeaseDuration: duration, Logger: quiet(), Controllers: []manager.Controller{pb.controller()}})
			if err != nil {
				t.Fatal(err)
			}
			startManager(t, b)

			revoked, revokedAt := revokeAfterRenewal(t, srv.Client(t))
			testkit.Eventually(t, 10*time.Second, "a's write to be refused", func() bool {
				_, refused := pa.snapshot()
				return len(refused) > 0
			})
			testkit.Eventually(t, 10*time.Second, "a to step down", func() bool { return !a.Leading() })
			if d := time.Since(revokedAt); d > duration/5 {
				t.Fatalf("a stepped down %s after the revocation, no sooner than its renewal would have noticed", d)
			}
			if n := termsEnded(t, regA, "fenced"); n != 1 {
				t.Fatalf("cairn_manager_terms_total{result=fenced} = %v on a, want 1", n)
			}
			testkit.Eventually(t, 30*time.Second, "b leads and writes", func() bool {
				ok, _ := pb.snapshot()
				return b.Leading() && len(ok) > 0 && ok[len(ok)-1].rv > revoked
			})
			ok, refused := pa.snapshot()
			first := ok[0].term
			for _, w := range ok {
				if w.term == first && w.rv > revoked {
					t.Errorf("a's write at revision %d, after the revocation at %d, committed", w.rv, revoked)
				}
			}
			t.Logf("a: %d writes committed, then refused: %v", len(ok), refused[0])
		})
	}
}

// revokeAfterRenewal waits for the controllers' Lease to be renewed, then
// at once releases it by hand (holder ""), and returns the revision and
// time of the release.
func revokeAfterRenewal(t *testing.T, c client.Interface) (int64, time.Time) {
	t.Helper()
	leases := client.For[*api.Lease](c)
	ctx := context.Background()
	l, err := leases.Get(ctx, "", manager.LeaseName)
	if err != nil {
		t.Fatal(err)
	}
	for {
		cur, err := leases.Get(ctx, "", manager.LeaseName)
		if err != nil {
			t.Fatal(err)
		}
		if cur.ResourceVersion == l.ResourceVersion {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		cur.Spec.HolderIdentity = ""
		out, err := leases.Update(ctx, cur)
		if errors.Is(err, api.ErrConflict) {
			l = cur
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		rv, _ := strconv.ParseInt(out.ResourceVersion, 10, 64)
		return rv, time.Now()
	}
}

// termsEnded reads cairn_manager_terms_total{result} from reg.
func termsEnded(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	n, _ := testkit.MetricSum(t, reg, "cairn_manager_terms_total", "result", result)
	return n
}

package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
)

// A property of UpdateStatuses checked against etcd's own history: random
// batches of status writes, some cancelled or timed out at random moments,
// some whose transaction is refused or applied with its answer lost,
// beside rival writers of the same objects (in the same registry and in
// another one on the same etcd). Every transaction the registry sends is
// recorded on its way to etcd; afterwards every revision of etcd's history
// must hold exactly the writes of one transaction (all of them: never a
// part), and every write's outcome must agree with the history.

const (
	wholeWidgets   = 64 // widgets written
	wholeWorkers   = 4  // goroutines calling UpdateStatuses
	wholeBatches   = 12 // calls per worker
	wholeMaxWrites = 16 // writes per call, at most
	wholeRivals    = 2  // goroutines writing single statuses meanwhile
)

// wholeBatch is one UpdateStatuses call: the tag its writes set as status,
// the widgets it writes, in order, and their outcomes.
type wholeBatch struct {
	tag   string
	names []string
	res   []registry.StatusResult
}

// put is one widget version of etcd's history: at revision rev, the
// widget name holds value, whose status carries tag.
type put struct {
	rev   int64
	name  string
	tag   string
	value string
}

// sentTxns records the writes of every transaction sent to etcd (by its
// signature, see signature); it is safe for concurrent use.
type sentTxns struct {
	prefix string
	mu     sync.Mutex
	sigs   map[string]bool
}

// record is a faults.sent hook: it keeps the widget puts of a transaction
// that writes any.
func (s *sentTxns) record(method string, req any) {
	txn, ok := req.(*etcdserverpb.TxnRequest)
	if method != methodTxn || !ok {
		return
	}
	var puts []string
	for _, op := range txn.Success {
		if p := op.GetRequestPut(); p != nil && strings.HasPrefix(string(p.Key), s.prefix) {
			puts = append(puts, strings.TrimPrefix(string(p.Key), s.prefix)+"="+string(p.Value))
		}
	}
	if len(puts) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sigs[signature(puts)] = true
}

// signature identifies a set of puts ("name=value"), in any order.
func signature(puts []string) string {
	return strings.Join(slices.Sorted(slices.Values(puts)), "\x00")
}

func TestUpdateStatuses_EveryTransactionIsWholeOrAbsentInEtcdHistory(t *testing.T) {
	enc, err := registry.LoadOrCreateKey(filepath.Join(t.TempDir(), "key"))
	if err != nil {
		t.Fatal(err)
	}
	opts := registry.Options{Kinds: append(kinds.All(kinds.Deps{}), testkit.WidgetKind()), Encryption: enc}
	r, clean, f := newFaultyRegistryWith(t, opts)
	other := startOn(t, clean, opts)
	k, err := r.Lookup(testkit.KindWidget)
	if err != nil {
		t.Fatal(err)
	}
	sent := &sentTxns{prefix: registry.KeyPrefix + k.Plural + "/default/", sigs: map[string]bool{}}
	f.mu.Lock()
	f.sent = sent.record
	f.mu.Unlock()
	ws := widgets(t, r, "default", wholeWidgets)
	watchWidgets(t, r) // the writes then take the versions they replace from the watch cache
	start := revisionOf(t, clean)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)

	stop := make(chan struct{})
	var rivals, workers sync.WaitGroup
	for g := range wholeRivals {
		rivals.Go(func() { rival(r, other, ws, g, rand.New(rand.NewPCG(seed, uint64(100+g))), stop) })
	}
	batches := make([][]*wholeBatch, wholeWorkers)
	for w := range wholeWorkers {
		workers.Go(func() { batches[w] = writeBatches(t, r, f, ws, w, rand.New(rand.NewPCG(seed, uint64(w)))) })
	}
	workers.Wait()
	close(stop)
	rivals.Wait()
	if t.Failed() {
		return
	}
	end, err := other.Create(sysCtx(), testkit.Widget("default", "end"))
	if err != nil {
		t.Fatal(err)
	}
	hist := widgetHistory(t, clean, sent.prefix, start, end.Name)
	checkRevisionsWhole(t, hist, sent)
	checkOutcomes(t, slices.Concat(batches...), hist)
}

// watchWidgets keeps a watch of r's Widgets open (and drained) until the
// test ends, so that the kind's watch cache runs.
func watchWidgets(t *testing.T, r *registry.Registry) {
	t.Helper()
	ctx, cancel := context.WithCancel(sysCtx())
	w, err := r.Watch(ctx, testkit.KindWidget, "default", api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range w.Events() {
		}
	}()
	t.Cleanup(func() { cancel(); w.Stop(); <-done })
}

// writeBatches makes worker w's wholeBatches calls of UpdateStatuses on
// random widgets of ws: each write without a resourceVersion, or (one in
// four) at the version read just before, which a rival may change first;
// each call with a context that may end at a random moment, and the
// store's next transaction (any caller's) possibly refused or applied
// with its answer lost. It reports a misuse of the results with t.Errorf.
func writeBatches(t *testing.T, r *registry.Registry, f *faults, ws []*api.Object, w int, rng *rand.Rand) []*wholeBatch {
	var out []*wholeBatch
	for i := range wholeBatches {
		b := &wholeBatch{tag: fmt.Sprintf("b-%d-%d", w, i)}
		var objs []*api.Object
		for _, j := range rng.Perm(len(ws))[:1+rng.IntN(wholeMaxWrites)] {
			o := withStatus(ws[j], fmt.Sprintf(`{"tag":%q}`, b.tag))
			o.ResourceVersion = "" // unconditional
			if rng.IntN(4) == 0 {
				cur, err := r.Get(sysCtx(), testkit.KindWidget, "default", o.Name)
				if err != nil {
					t.Errorf("read %s: %v", o.Name, err)
					return out
				}
				o.ResourceVersion = cur.ResourceVersion
			}
			objs, b.names = append(objs, o), append(b.names, o.Name)
		}
		ctx, cancel := batchContext(rng)
		switch rng.IntN(8) {
		case 0:
			f.set(1, 0, false)
		case 1:
			f.set(0, 1, false)
		default:
			f.set(0, 0, false)
		}
		b.res = r.UpdateStatuses(ctx, objs)
		cancel()
		if len(b.res) != len(objs) {
			t.Errorf("batch %s: %d results for %d writes", b.tag, len(b.res), len(objs))
			return out
		}
		out = append(out, b)
	}
	return out
}

// batchContext is the context of one call: cancelled, or timed out, after
// a random few milliseconds (one in four each), else not ended.
func batchContext(rng *rand.Rand) (context.Context, context.CancelFunc) {
	after := time.Duration(rng.IntN(4000)) * time.Microsecond
	switch rng.IntN(4) {
	case 0:
		ctx, cancel := context.WithCancel(sysCtx())
		t := time.AfterFunc(after, cancel)
		return ctx, func() { t.Stop(); cancel() }
	case 1:
		return context.WithTimeout(sysCtx(), after)
	}
	return context.WithCancel(sysCtx())
}

// rival writes single statuses of random widgets of ws until stop is
// closed, each with its own tag "x-g-n": without a resourceVersion through
// other (another registry on the same etcd, whose writes are not
// recorded), or at the version just read through r.
func rival(r, other *registry.Registry, ws []*api.Object, g int, rng *rand.Rand, stop <-chan struct{}) {
	ctx := sysCtx()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		// Paced, so that the batches mostly win their races: a write
		// that loses every race is a Conflict, not what is tested here.
		time.Sleep(time.Duration(2000+rng.IntN(8000)) * time.Microsecond)
		o := ws[rng.IntN(len(ws))]
		status := fmt.Sprintf(`{"tag":"x-%d-%d"}`, g, n)
		if n%2 == 0 {
			o = withStatus(o, status)
			o.ResourceVersion = ""
			_, _ = other.UpdateStatus(ctx, o)
			continue
		}
		if cur, err := r.Get(ctx, testkit.KindWidget, "default", o.Name); err == nil {
			_, _ = r.UpdateStatus(ctx, withStatus(cur, status))
		}
	}
}

// widgetHistory reads etcd's history of the widgets under prefix after
// revision from, in revision order, up to (not including) the first put of
// the widget named end. It fails the test on a deletion or when the
// history cannot be read within 10s.
func widgetHistory(t *testing.T, s *store.Store, prefix string, from int64, end string) []put {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []put
	for resp := range s.Client().Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(from+1)) {
		if err := resp.Err(); err != nil {
			t.Fatalf("watch etcd's history from %d: %v", from+1, err)
		}
		for _, ev := range resp.Events {
			name := strings.TrimPrefix(string(ev.Kv.Key), prefix)
			if ev.Type != clientv3.EventTypePut {
				t.Fatalf("widget %s was deleted at revision %d", name, ev.Kv.ModRevision)
			}
			if name == end {
				return out
			}
			var v struct {
				Status struct {
					Tag string `json:"tag"`
				} `json:"status"`
			}
			if err := json.Unmarshal(ev.Kv.Value, &v); err != nil {
				t.Fatalf("widget %s at revision %d: %v", name, ev.Kv.ModRevision, err)
			}
			out = append(out, put{rev: ev.Kv.ModRevision, name: name, tag: v.Status.Tag, value: string(ev.Kv.Value)})
		}
	}
	t.Fatalf("etcd's history ended before the widget %s was created: %v", end, ctx.Err())
	return nil
}

// checkRevisionsWhole fails unless every revision of hist holds exactly
// the widget writes of one transaction sent through sent (all of them), or
// one write of a rival of another registry (tag "x-").
func checkRevisionsWhole(t *testing.T, hist []put, sent *sentTxns) {
	t.Helper()
	for len(hist) > 0 {
		n := 1
		for n < len(hist) && hist[n].rev == hist[0].rev {
			n++
		}
		at := hist[:n]
		hist = hist[n:]
		puts := make([]string, len(at))
		for i, p := range at {
			puts[i] = p.name + "=" + p.value
		}
		if sent.sigs[signature(puts)] || len(at) == 1 && strings.HasPrefix(at[0].tag, "x-") {
			continue
		}
		t.Errorf("revision %d holds %d writes (%s) that no transaction sent holds together: a transaction applied in part",
			at[0].rev, len(at), describe(at))
	}
}

// describe lists puts as name:tag.
func describe(puts []put) string {
	s := make([]string, len(puts))
	for i, p := range puts {
		s[i] = p.name + ":" + p.tag
	}
	return strings.Join(s, " ")
}

// checkOutcomes fails unless every batch agrees with hist (checkBatch),
// and unless some batches committed and some failed whole (the property
// was exercised). It logs how many of those were applied all the same.
func checkOutcomes(t *testing.T, batches []*wholeBatch, hist []put) {
	t.Helper()
	at := map[string]int64{} // "tag/name" → revision
	for _, p := range hist {
		at[p.tag+"/"+p.name] = p.rev
	}
	acked, failed, failedApplied := 0, 0, 0
	for _, b := range batches {
		n, applied := checkBatch(t, b, at)
		acked += n
		if n == 0 && slices.ContainsFunc(b.res, func(r registry.StatusResult) bool { return !errors.Is(r.Err, api.ErrConflict) }) {
			failed++
			if applied {
				failedApplied++
			}
		}
	}
	t.Logf("%d batches: %d writes acknowledged; %d batches failed whole (their context ended, their store call failed), %d of them applied all the same",
		len(batches), acked, failed, failedApplied)
	if acked == 0 || failed == 0 {
		t.Errorf("the batches did not both commit and fail: the property was not exercised")
	}
}

// checkBatch fails unless b's writes found in etcd's history (at: the
// revision of each "tag/name") are all at one revision (one transaction),
// every write answered as committed is there, at the resourceVersion
// answered, and none refused with Conflict is. A write that failed
// otherwise (its context ended, its answer was lost) may be there or not:
// checkRevisionsWhole tells that its transaction is whole. It returns how
// many writes were answered as committed and whether any was applied.
func checkBatch(t *testing.T, b *wholeBatch, at map[string]int64) (acked int, applied bool) {
	t.Helper()
	revs := map[int64]bool{}
	for i, name := range b.names {
		rev, in := at[b.tag+"/"+name]
		if in {
			revs[rev] = true
		}
		switch res := b.res[i]; {
		case res.Err == nil:
			acked++
			if !in || res.Object.ResourceVersion != strconv.FormatInt(rev, 10) {
				t.Errorf("batch %s: write of %s answered committed at %s; in etcd's history: %v (revision %d)",
					b.tag, name, res.Object.ResourceVersion, in, rev)
			}
		case errors.Is(res.Err, api.ErrConflict) && in:
			t.Errorf("batch %s: write of %s refused (%v), yet applied at revision %d", b.tag, name, res.Err, rev)
		}
	}
	if len(revs) > 1 {
		t.Errorf("batch %s was applied at several revisions %v: not one transaction", b.tag, slices.Sorted(maps.Keys(revs)))
	}
	return acked, len(revs) > 0
}

package registry_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/storetest"
)

// faults makes etcd fail the way a lost member or leader does, between the
// registry and a real etcd: transactions refused before they are sent, or
// applied with their answer lost; and then, optionally, every read
// failing.
type faults struct {
	mu sync.Mutex
	// refuse is how many transactions to refuse (not sent: no leader).
	refuse int
	// lose is how many transactions to apply and then fail as a lost
	// connection would.
	lose int
	// blind makes every call fail (no leader) once an answer was lost.
	blind bool
	// lost counts the answers lost.
	lost int
	// sent, when set, is told of every call before it is made (or
	// refused), with its request.
	sent func(method string, req any)
}

const (
	methodTxn   = "/etcdserverpb.KV/Txn"
	methodRange = "/etcdserverpb.KV/Range"
)

func (f *faults) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	f.mu.Lock()
	blind := f.blind && f.lost > 0 && (method == methodTxn || method == methodRange)
	refuse := method == methodTxn && f.refuse > 0
	lose := method == methodTxn && !refuse && f.lose > 0
	if refuse {
		f.refuse--
	}
	if lose {
		f.lose--
		f.lost++
	}
	sent := f.sent
	f.mu.Unlock()
	if sent != nil {
		sent(method, req)
	}
	switch {
	case blind, refuse:
		return status.Error(codes.Unavailable, "etcdserver: no leader")
	case lose:
		if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
			return err
		}
		return status.Error(codes.Unavailable, "error reading from server: EOF")
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (f *faults) set(refuse, lose int, blind bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse, f.lose, f.blind, f.lost = refuse, lose, blind, 0
}

// newFaultyRegistry is a registry whose store's client goes through f, and
// the store itself without faults.
func newFaultyRegistry(t *testing.T) (*registry.Registry, *store.Store, *faults) {
	t.Helper()
	return newFaultyRegistryWith(t, registry.Options{})
}

// newFaultyRegistryWith is newFaultyRegistry with opts (see startOn).
func newFaultyRegistryWith(t *testing.T, opts registry.Options) (*registry.Registry, *store.Store, *faults) {
	t.Helper()
	clean, endpoint := storetest.Start(t)
	f := &faults{}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second,
		Logger: zap.NewNop(), MaxCallSendMsgSize: store.MaxCallSendMsgBytes,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(f.intercept)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return startOn(t, store.New(cli), opts), clean, f
}

// deadlineCtx is the system's context with a store timeout of d.
func deadlineCtx(d time.Duration) context.Context { return store.WithTimeout(sysCtx(), d) }

func TestOutcome_CreateWhoseAnswerWasLostIsAnsweredAsCreated(t *testing.T) {
	r, s, f := newFaultyRegistry(t)
	ctx := deadlineCtx(5 * time.Second)
	f.set(0, 1, false)
	out, err := r.Create(ctx, testkit.Secret("default", "once", nil))
	if err != nil {
		t.Fatalf("create whose answer was lost: %v, want it created", err)
	}
	got, err := r.Get(ctx, "Secret", "default", "once")
	if err != nil || got.UID != out.UID || got.ResourceVersion != out.ResourceVersion {
		t.Fatalf("stored %+v (%v), answered %+v", got, err, out.ObjectMeta)
	}
	if f.lost != 1 {
		t.Fatalf("%d answers lost, want 1", f.lost)
	}
	_ = s
}

func TestOutcome_GeneratedNameIsCreatedOnceWhenItsAnswerIsLost(t *testing.T) {
	r, _, f := newFaultyRegistry(t)
	ctx := registry.WithRequestID(deadlineCtx(5*time.Second), "req-1")
	f.set(0, 1, false)
	in := testkit.Secret("default", "", nil)
	in.GenerateName = "gen-"
	out, err := r.Create(ctx, in)
	if err != nil {
		t.Fatalf("create whose answer was lost: %v", err)
	}
	if out.Labels[api.LabelRequestID] != "req-1" {
		t.Errorf("labels %v, want the request id", out.Labels)
	}
	list, err := r.List(ctx, "Secret", "default", api.ListOptions{LabelSelector: api.LabelRequestID + "=req-1"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != out.Name {
		t.Fatalf("objects of the request: %v (%v), want exactly %s", list, err, out.Name)
	}
}

func TestOutcome_ConditionalUpdateWhoseAnswerWasLostIsNoConflict(t *testing.T) {
	r, _, f := newFaultyRegistry(t)
	ctx := deadlineCtx(5 * time.Second)
	cur, err := r.Create(ctx, testkit.Secret("default", "s", nil))
	if err != nil {
		t.Fatal(err)
	}
	next := cur.DeepCopy()
	next.Labels = map[string]string{"v": "2"}
	f.set(0, 1, false)
	out, err := r.Update(ctx, next)
	if err != nil {
		t.Fatalf("update whose answer was lost: %v, want it updated", err)
	}
	got, _ := r.Get(ctx, "Secret", "default", "s")
	if got.Labels["v"] != "2" || got.ResourceVersion != out.ResourceVersion {
		t.Fatalf("stored %+v, answered %+v", got.ObjectMeta, out.ObjectMeta)
	}
}

// TestOutcome_PatchWhoseAnswerWasLostIsAppliedOnce: a JSON patch that
// appends to a list is not idempotent; its answer lost, it is still
// applied exactly once.
func TestOutcome_PatchWhoseAnswerWasLostIsAppliedOnce(t *testing.T) {
	r, _, f := newFaultyRegistry(t)
	ctx := deadlineCtx(5 * time.Second)
	in := testkit.Secret("default", "p", nil)
	in.Finalizers = []string{"a.example/one"}
	if _, err := r.Create(ctx, in); err != nil {
		t.Fatal(err)
	}
	f.set(0, 1, false)
	patch := []byte(`[{"op":"add","path":"/metadata/finalizers/-","value":"a.example/two"}]`)
	if _, err := r.Patch(ctx, "Secret", "default", "p", patch, false, api.WriteOptions{PatchType: api.JSONPatch}); err != nil {
		t.Fatalf("patch whose answer was lost: %v", err)
	}
	got, _ := r.Get(ctx, "Secret", "default", "p")
	if len(got.Finalizers) != 2 {
		t.Fatalf("finalizers %v, want the patch applied once", got.Finalizers)
	}
}

func TestOutcome_WritesRefusedBeforeTheyAreSentAreRetried(t *testing.T) {
	r, _, f := newFaultyRegistry(t)
	ctx := deadlineCtx(5 * time.Second)
	f.set(3, 0, false)
	if _, err := r.Create(ctx, testkit.Secret("default", "late", nil)); err != nil {
		t.Fatalf("create refused three times: %v, want it retried", err)
	}
}

// TestOutcome_StoreFailuresBeyondTheDeadline: a write the store keeps
// refusing is ServiceUnavailable (with Retry-After) once the store timeout
// passes; one whose answer was lost and whose outcome cannot be read is a
// Timeout that names the object and the request id to look for.
func TestOutcome_StoreFailuresBeyondTheDeadline(t *testing.T) {
	r, _, f := newFaultyRegistry(t)
	const timeout = 500 * time.Millisecond
	ctx := registry.WithRequestID(deadlineCtx(timeout), "req-2")
	f.set(1<<30, 0, false)
	start := time.Now()
	_, err := r.Create(ctx, testkit.Secret("default", "refused", nil))
	st := statusOf(t, err)
	if st.Code != http.StatusServiceUnavailable || st.Details == nil || st.Details.RetryAfterSeconds <= 0 {
		t.Errorf("create refused until the deadline: %+v, want 503 with Retry-After", st)
	}
	if took := time.Since(start); took > 3*timeout {
		t.Errorf("the refused create took %s, more than 3× the store timeout", took)
	}

	f.set(0, 1<<30, true)
	in := testkit.Secret("default", "", nil)
	in.GenerateName = "lost-"
	start = time.Now()
	_, err = r.Create(ctx, in)
	st = statusOf(t, err)
	if st.Code != http.StatusGatewayTimeout || !strings.Contains(st.Message, "may or may not have been applied") ||
		!strings.Contains(st.Message, `Secret "default/lost-`) || !strings.Contains(st.Message, api.LabelRequestID+"=req-2") {
		t.Errorf("create whose outcome is unknown: %+v, want a 504 naming the object and the request id", st)
	}
	t.Logf("the 504: %s", st.Message)
	if st.Details == nil || !strings.HasPrefix(st.Details.Name, "lost-") {
		t.Errorf("details %+v, want the generated name", st.Details)
	}
	if took := time.Since(start); took > 3*timeout {
		t.Errorf("the unknown create took %s, more than 3× the store timeout", took)
	}
	if api.ReasonOf(err) != api.ReasonTimeout {
		t.Errorf("%v is not a Timeout", err)
	}
}

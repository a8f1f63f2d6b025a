// Package store is cairn's persistence: keys and values in etcd, reached
// through the official clientv3 whether etcd is embedded or external. Every
// write is a transaction guarded by compare-and-swap on mod revisions; reads
// and watches can be pinned to a revision.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Errors returned by the store. They are declared once here, every etcd
// failure is classified into them in one function (classify), and the
// registry maps them to API errors in one function of its own. A failure
// that fits none of them is returned wrapped ("store: ...").
var (
	// ErrNotFound: the key does not exist (at the requested revision).
	ErrNotFound = errors.New("store: key not found")
	// ErrPrecondition: a transaction's condition did not hold (a key
	// expected absent exists, or a key changed since it was read).
	ErrPrecondition = errors.New("store: precondition failed")
	// ErrCompacted: the requested revision has been compacted away.
	ErrCompacted = errors.New("store: revision compacted")
	// ErrFutureRevision: the requested revision is newer than the store's.
	ErrFutureRevision = errors.New("store: revision not yet reached")
	// ErrUnavailable: etcd cannot serve the request now (no leader, the
	// member is stopping or unhealthy or overloaded, no connection, or the
	// store's client is closed), or a read got no answer in time. A write
	// that fails with it was not applied. A retry may succeed.
	ErrUnavailable = errors.New("store: etcd unavailable")
	// ErrTimeout: a transaction was sent but its outcome is unknown: it did
	// not complete in time (etcd timed out, or the caller's deadline or
	// store timeout passed) or the connection to etcd was lost before its
	// answer came. It may or may not have been applied. Reads never return
	// it (a read that gets no answer in time is ErrUnavailable).
	ErrTimeout = errors.New("store: etcd request timed out")
	// ErrNoSpace: the store is full. Either etcd's database reached its
	// quota (etcd then raises its NOSPACE alarm and refuses every request
	// that stores data, while reads and pure deletions pass), or Fits
	// found that a write would take the store past its limits. The error
	// is a *SpaceError with the sizes. Etcd's own refusal is returned
	// before it writes anything, but for one case at the quota's edge: a
	// write admitted just before another filled the store is applied, and
	// still answered with this error.
	ErrNoSpace = errors.New("store: no space")
	// ErrTooLarge: a request is larger than etcd accepts in one request
	// (MaxTxnBytes, or an external cluster's smaller --max-request-bytes);
	// nothing was written. The error is a *SizeError.
	ErrTooLarge = errors.New("store: request too large")
)

// KV is a stored key with its value and revisions.
type KV struct {
	Key            string
	Value          []byte
	ModRevision    int64
	CreateRevision int64
}

// Store reads and writes keys in etcd. It is safe for concurrent use.
type Store struct {
	cli *clientv3.Client
	// space is the space monitor, once MonitorSpace has attached one.
	space atomic.Pointer[SpaceMonitor]
}

// New wraps an etcd client. The caller keeps ownership of the client.
func New(cli *clientv3.Client) *Store { return &Store{cli: cli} }

// Client returns the etcd client, for leases and elections.
func (s *Store) Client() *clientv3.Client { return s.cli }

// Get reads one key at the latest revision (a linearizable read). It returns
// ErrNotFound when the key does not exist, and ErrUnavailable when etcd
// does not answer (within the store timeout of ctx, see WithTimeout).
func (s *Store) Get(ctx context.Context, key string) (*KV, error) {
	var resp *clientv3.GetResponse
	err := s.read(ctx, func(ctx context.Context) (err error) {
		resp, err = s.cli.Get(ctx, key)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 {
		return nil, ErrNotFound
	}
	return toKV(resp.Kvs[0]), nil
}

// GetStale reads one key from the local etcd member without a quorum
// round, so it may miss the latest writes. Use it only for values that a
// write then guards with Unchanged, which fails (ErrPrecondition) if the
// value read was stale. It returns ErrNotFound when the key does not exist
// locally.
func (s *Store) GetStale(ctx context.Context, key string) (*KV, error) {
	var resp *clientv3.GetResponse
	err := s.read(ctx, func(ctx context.Context) (err error) {
		resp, err = s.cli.Get(ctx, key, clientv3.WithSerializable())
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 {
		return nil, ErrNotFound
	}
	return toKV(resp.Kvs[0]), nil
}

// ListOptions bounds a List.
type ListOptions struct {
	// Revision pins the read; 0 reads the latest revision.
	Revision int64
	// From is the first key to return (inclusive); "" starts at the prefix.
	From string
	// Limit caps the keys returned; 0 means all.
	Limit int64
}

// ListResult is one page of a List.
type ListResult struct {
	KVs []*KV
	// Revision is the store revision the page was read at.
	Revision int64
	// More reports that keys remain after the last one returned.
	More bool
}

// List reads the keys under prefix in key order. It returns ErrCompacted
// when opts.Revision has been compacted and ErrFutureRevision when it is
// ahead of the store.
func (s *Store) List(ctx context.Context, prefix string, opts ListOptions) (*ListResult, error) {
	from := prefix
	if opts.From != "" {
		from = opts.From
	}
	ops := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix))}
	if opts.Revision > 0 {
		ops = append(ops, clientv3.WithRev(opts.Revision))
	}
	if opts.Limit > 0 {
		ops = append(ops, clientv3.WithLimit(opts.Limit))
	}
	var resp *clientv3.GetResponse
	err := s.read(ctx, func(ctx context.Context) (err error) {
		resp, err = s.cli.Get(ctx, from, ops...)
		return err
	})
	if err != nil {
		return nil, err
	}
	res := &ListResult{Revision: resp.Header.Revision, More: resp.More, KVs: make([]*KV, len(resp.Kvs))}
	if opts.Revision > 0 {
		res.Revision = opts.Revision
	}
	for i, kv := range resp.Kvs {
		res.KVs[i] = toKV(kv)
	}
	return res, nil
}

// Revision returns the store's current revision.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	var resp *clientv3.GetResponse
	err := s.read(ctx, func(ctx context.Context) (err error) {
		resp, err = s.cli.Get(ctx, "\x00", clientv3.WithCountOnly())
		return err
	})
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

// Cond is a condition a transaction checks before writing.
type Cond struct{ cmp clientv3.Cmp }

// Absent holds when key does not exist.
func Absent(key string) Cond {
	return Cond{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)}
}

// Present holds when key exists.
func Present(key string) Cond {
	return Cond{clientv3.Compare(clientv3.CreateRevision(key), ">", 0)}
}

// Unchanged holds when key exists with exactly mod revision rev.
func Unchanged(key string, rev int64) Cond {
	return Cond{clientv3.Compare(clientv3.ModRevision(key), "=", rev)}
}

// Op is a write inside a transaction.
type Op struct{ op clientv3.Op }

// Put writes value at key.
func Put(key string, value []byte) Op { return Op{clientv3.OpPut(key, string(value))} }

// Del removes key.
func Del(key string) Op { return Op{clientv3.OpDelete(key)} }

// Txn applies ops atomically if every condition holds, and returns the
// revision of the write. It returns ErrPrecondition, and writes nothing,
// when a condition fails; a *SizeError (ErrTooLarge), sending nothing,
// when the transaction encodes to more than MaxTxnBytes; a *SpaceError
// (ErrNoSpace) when etcd refuses it for lack of space; ErrUnavailable
// when it was not applied because etcd could not take it (no leader, no
// member reachable); ErrTimeout when it was sent and its outcome is
// unknown. It is sent once, bounded by the store timeout of ctx.
func (s *Store) Txn(ctx context.Context, conds []Cond, ops ...Op) (int64, error) {
	if n := TxnBytes(conds, ops); n > MaxTxnBytes {
		return 0, &SizeError{Size: int64(n), Limit: MaxTxnBytes}
	}
	cmps := make([]clientv3.Cmp, len(conds))
	for i, c := range conds {
		cmps[i] = c.cmp
	}
	eops := make([]clientv3.Op, len(ops))
	for i, o := range ops {
		eops[i] = o.op
	}
	if err := s.closed(); err != nil {
		return 0, err
	}
	ctx, cancel, _ := bound(ctx)
	defer cancel()
	resp, err := s.cli.Txn(ctx).If(cmps...).Then(eops...).Commit()
	if err != nil {
		return 0, s.classifyWrite(err)
	}
	if !resp.Succeeded {
		return 0, ErrPrecondition
	}
	if m := s.space.Load(); m != nil {
		m.wrote(putCost(ops))
	}
	return resp.Header.Revision, nil
}

// Compact discards history before rev. Compacting to a revision already
// compacted is not an error.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	_, err := s.cli.Compact(ctx, rev)
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return s.classify(err)
	}
	return nil
}

func toKV(kv interface {
	GetKey() []byte
	GetValue() []byte
	GetModRevision() int64
	GetCreateRevision() int64
}) *KV {
	return &KV{Key: string(kv.GetKey()), Value: kv.GetValue(),
		ModRevision: kv.GetModRevision(), CreateRevision: kv.GetCreateRevision()}
}

// closed returns ErrUnavailable once the store's client is closed, so that
// calls fail at once instead of after the client's retries.
func (s *Store) closed() error {
	if err := s.cli.Ctx().Err(); err != nil {
		return fmt.Errorf("%w: the etcd client is closed", ErrUnavailable)
	}
	return nil
}

// classify turns an etcd client failure into the store's declared errors
// (wrapped, so the cause stays readable in logs). It is the one place where
// etcd failures are told apart.
func (s *Store) classify(err error) error {
	if err == nil {
		return nil
	}
	err = classify(err, s.cli.Ctx().Err() != nil)
	if errors.Is(err, ErrNoSpace) {
		return s.noSpace(err)
	}
	return err
}

// classify is Store.classify for code without a Store at hand (a watch);
// closed reports that the store's client has been closed.
func classify(err error, closed bool) error {
	switch {
	case errors.Is(err, rpctypes.ErrNoSpace) || errors.Is(err, rpctypes.ErrGRPCNoSpace):
		return &SpaceError{cause: err}
	case errors.Is(err, rpctypes.ErrRequestTooLarge) || errors.Is(err, rpctypes.ErrGRPCRequestTooLarge) ||
		isSendTooLarge(err):
		return &SizeError{cause: err}
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%w: %v", ErrCompacted, err)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("%w: %v", ErrFutureRevision, err)
	case isTimeout(err):
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	case closed || isUnavailable(err):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return fmt.Errorf("store: %w", err)
}

// classifyWrite is classify for a transaction, which tells the failures
// that left it unapplied (ErrUnavailable: it never reached a member, or
// was refused before it was proposed) from those after which its outcome
// is unknown (ErrTimeout: a deadline, a lost connection, a member that
// stopped with it in flight).
func (s *Store) classifyWrite(err error) error {
	c := s.classify(err)
	switch {
	case s.cli.Ctx().Err() != nil && errors.Is(c, ErrUnavailable):
		return c
	case notSent(err):
		if errors.Is(c, ErrUnavailable) {
			return c
		}
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case errors.Is(c, ErrUnavailable):
		return fmt.Errorf("%w: the connection to etcd failed with the write in flight: %w", ErrTimeout, err)
	}
	return c
}

// notSent reports failures after which a transaction is known not to have
// been applied: no member could be reached (etcd's client never sent it),
// or the member refused it before proposing it (no leader, overloaded, not
// capable).
func notSent(err error) bool {
	for _, e := range []error{clientv3.ErrNoAvailableEndpoints, rpctypes.ErrNoLeader, rpctypes.ErrGRPCNoLeader,
		rpctypes.ErrTooManyRequests, rpctypes.ErrGRPCRequestTooManyRequests, rpctypes.ErrNotCapable, rpctypes.ErrGRPCNotCapable} {
		if errors.Is(err, e) {
			return true
		}
	}
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	msg := st.Message()
	switch st.Code() {
	case codes.DeadlineExceeded, codes.Canceled:
		// gRPC's picker gave up waiting for a connection: the request
		// was never sent.
		return strings.Contains(msg, "while waiting for connections to become ready") ||
			strings.Contains(msg, "latest balancer error")
	case codes.Unavailable:
		return strings.HasSuffix(msg, "there is no address available") || strings.HasSuffix(msg, "there is no connection available")
	case codes.Unknown:
		return strings.Contains(msg, raftDropped) // refused by raft: never in its log
	}
	return false
}

// isTimeout reports etcd's own timeouts, an expired deadline and a
// cancelled context: the caller stopped waiting, so a transaction's
// outcome is unknown (ErrTimeout) and a read got no answer
// (ErrUnavailable), as when a deadline passes.
func isTimeout(err error) bool {
	for _, e := range []error{rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail,
		rpctypes.ErrTimeoutDueToConnectionLost, rpctypes.ErrTimeoutWaitAppliedIndex, context.DeadlineExceeded, context.Canceled} {
		if errors.Is(err, e) {
			return true
		}
	}
	c := grpcCode(err)
	return c == codes.DeadlineExceeded || c == codes.Canceled
}

// isUnavailable reports failures after which etcd may answer again soon:
// no leader, a stopping, unhealthy or overloaded member, a lost or refused
// connection.
func isUnavailable(err error) bool {
	if errors.Is(err, clientv3.ErrNoAvailableEndpoints) ||
		errors.Is(err, rpctypes.ErrTooManyRequests) || errors.Is(err, rpctypes.ErrGRPCRequestTooManyRequests) {
		return true
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code() == codes.Unavailable
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unknown {
		// raft's own errors, which etcd passes on unmapped: its member
		// stopped, or it dropped the proposal (no leader).
		return strings.Contains(st.Message(), raftStopped) || strings.Contains(st.Message(), raftDropped)
	}
	return grpcCode(err) == codes.Unavailable
}

// The messages of raft's errors that etcd passes on as they are.
const (
	raftStopped = "raft: stopped"
	raftDropped = "raft proposal dropped"
)

// isSendTooLarge reports the gRPC client's refusal to send a message over
// its MaxCallSendMsgSize (ResourceExhausted, which etcd's own "no space"
// and "too many requests" share, told apart by their messages).
func isSendTooLarge(err error) bool {
	if grpcCode(err) != codes.ResourceExhausted {
		return false
	}
	st, _ := status.FromError(err)
	return strings.Contains(st.Message(), "larger than max")
}

// grpcCode returns the gRPC code of err, or codes.Unknown.
func grpcCode(err error) codes.Code {
	if st, ok := status.FromError(err); ok {
		return st.Code()
	}
	return codes.Unknown
}

// mapErr classifies a failure of a watch, which has no Store at hand.
func mapErr(err error) error { return classify(err, false) }

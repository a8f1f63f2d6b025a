package store

import (
	"fmt"
	"strconv"
	"strings"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
)

// The request sizes cairn and etcd agree on. From the outside in:
//
//   - the HTTP server reads request bodies up to 3 MiB (server);
//   - the registry refuses an object whose stored encoding exceeds its
//     MaxObjectBytes (1.5 MiB by default), so that a transaction holds at
//     least two objects of the largest size;
//   - Store.Txn refuses a transaction that encodes to more than
//     MaxTxnBytes (4 MiB less 1 KiB), before sending it;
//   - the embedded etcd accepts requests up to MaxRequestBytes (4 MiB): a
//     transaction plus etcd's request header, which the 1 KiB covers;
//   - the client sends messages up to MaxCallSendMsgBytes, etcd's gRPC
//     receive limit (MaxRequestBytes + 512 KiB), so that etcd, not the
//     client, judges a request's size.
//
// An external etcd cluster keeps its own --max-request-bytes (1.5 MiB by
// default); run it with at least 4 MiB to accept what cairn accepts. A
// request it refuses as too large is an ErrTooLarge all the same.
const (
	// MaxRequestBytes is the embedded etcd's --max-request-bytes.
	MaxRequestBytes = 4 << 20
	// MaxTxnBytes is the largest transaction, encoded, that Store.Txn
	// sends.
	MaxTxnBytes = MaxRequestBytes - 1<<10
	// MaxCallSendMsgBytes is the client's gRPC send limit: etcd's receive
	// limit for MaxRequestBytes.
	MaxCallSendMsgBytes = MaxRequestBytes + 512<<10
)

// kvOverhead is what etcd's quota counts for a put besides its key and
// value.
const kvOverhead = 256

// SizeError is the error of a request larger than etcd accepts in one
// request; errors.Is(err, ErrTooLarge) holds for it.
type SizeError struct {
	// Size is the encoded size of the transaction and Limit the largest
	// the store sends; both are 0 when etcd itself refused the request
	// (its own --max-request-bytes is the limit then).
	Size, Limit int64
	cause       error
}

func (e *SizeError) Error() string {
	if e.Limit == 0 {
		return fmt.Sprintf("%v: etcd refused the request as larger than its --max-request-bytes: %v", ErrTooLarge, e.cause)
	}
	return fmt.Sprintf("%v: the transaction encodes to %d bytes, one etcd request holds at most %d (%s)",
		ErrTooLarge, e.Size, e.Limit, FormatBytes(e.Limit))
}

// Is makes errors.Is(err, ErrTooLarge) hold.
func (e *SizeError) Is(target error) bool { return target == ErrTooLarge }

// Unwrap returns etcd's error, if any.
func (e *SizeError) Unwrap() error { return e.cause }

// TxnBytes is the encoded size of the transaction of conds and ops, as
// Store.Txn would send it.
func TxnBytes(conds []Cond, ops []Op) int {
	req := &pb.TxnRequest{Compare: make([]*pb.Compare, len(conds)), Success: make([]*pb.RequestOp, len(ops))}
	for i := range conds {
		req.Compare[i] = conds[i].cmp.GetCompare()
	}
	for i, o := range ops {
		if o.op.IsPut() {
			req.Success[i] = &pb.RequestOp{Request: &pb.RequestOp_RequestPut{
				RequestPut: &pb.PutRequest{Key: o.op.KeyBytes(), Value: o.op.ValueBytes()}}}
		} else {
			req.Success[i] = &pb.RequestOp{Request: &pb.RequestOp_RequestDeleteRange{
				RequestDeleteRange: &pb.DeleteRangeRequest{Key: o.op.KeyBytes(), RangeEnd: o.op.RangeBytes()}}}
		}
	}
	return proto.Size(req)
}

// putCost is what etcd's quota counts for ops: their puts' keys and values
// and a fixed overhead each. A transaction of deletions costs nothing, and
// etcd accepts it even on a full store.
func putCost(ops []Op) int64 {
	var n int64
	for _, o := range ops {
		if o.op.IsPut() {
			n += int64(len(o.op.KeyBytes()) + len(o.op.ValueBytes()) + kvOverhead)
		}
	}
	return n
}

// FormatBytes writes n bytes the way sizes are given to cairn, in the
// largest binary unit with at most one decimal: 1.5Mi, 2Gi, 900.
func FormatBytes(n int64) string {
	v, unit := float64(n), ""
	for _, next := range []string{"Ki", "Mi", "Gi", "Ti"} {
		if v < 1024 {
			break
		}
		v, unit = v/1024, next
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + unit
}

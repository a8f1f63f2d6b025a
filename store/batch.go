package store

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// GetStaleMany reads keys from the local etcd member in one round trip (a
// read-only transaction), without a quorum round: like GetStale, it may
// miss the latest writes, so use it only for values that a write then
// guards with Unchanged. It returns one entry per key, in order, nil for a
// key that does not exist locally; the whole read fails (ErrUnavailable,
// ErrTimeout, ...) or none of it does. It blocks for the one read; keys
// must number at most etcd's --max-txn-ops (128 by default), else etcd
// refuses the read (an error wrapping its message).
func (s *Store) GetStaleMany(ctx context.Context, keys []string) ([]*KV, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	if err := s.closed(); err != nil {
		return nil, err
	}
	ops := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		ops[i] = clientv3.OpGet(k, clientv3.WithSerializable())
	}
	resp, err := s.cli.Txn(ctx).Then(ops...).Commit()
	if err != nil {
		return nil, s.classify(err)
	}
	out := make([]*KV, len(keys))
	for i, r := range resp.Responses {
		if rr := r.GetResponseRange(); rr != nil && len(rr.Kvs) > 0 {
			out[i] = toKV(rr.Kvs[0])
		}
	}
	return out, nil
}

package store

import (
	"context"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ListKeys reads every key under prefix at the latest revision (a
// linearizable read), in key order, without their values: each KV has its
// Key and revisions and a nil Value. It lets a cache of decoded values
// check, for the price of one round without values, that what it holds is
// still what is stored (same keys, same ModRevisions). It blocks on one
// etcd range (within the store timeout of ctx, see WithTimeout). Errors:
// ErrUnavailable, and the store's others as classified.
func (s *Store) ListKeys(ctx context.Context, prefix string) ([]*KV, error) {
	var resp *clientv3.GetResponse
	err := s.read(ctx, func(ctx context.Context) (err error) {
		resp, err = s.cli.Get(ctx, prefix, clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix)), clientv3.WithKeysOnly())
		return err
	})
	if err != nil {
		return nil, err
	}
	kvs := make([]*KV, len(resp.Kvs))
	for i, kv := range resp.Kvs {
		kvs[i] = toKV(kv)
	}
	return kvs, nil
}

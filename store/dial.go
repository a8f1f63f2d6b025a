package store

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Dial connects a client to endpoints and checks that etcd answers.
func Dial(ctx context.Context, endpoints []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
		DialTimeout:        10 * time.Second,
		Logger:             zap.NewNop(),
		MaxCallSendMsgSize: MaxCallSendMsgBytes,
	})
	if err != nil {
		return nil, fmt.Errorf("store: connect to etcd %v: %w", endpoints, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Get(cctx, "\x00", clientv3.WithCountOnly()); err != nil {
		cli.Close()
		return nil, fmt.Errorf("store: etcd %v does not answer: %w", endpoints, err)
	}
	return cli, nil
}

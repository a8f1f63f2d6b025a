package store

import (
	"context"
	"errors"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestClassify_CancelledIsATimeoutNotAnUnknownFailure: a call whose
// caller cancelled it is a transaction with an unknown outcome
// (ErrTimeout) or a read that got no answer (ErrUnavailable), as a
// passed deadline is, and not an unclassified failure (which the API
// answers 500).
func TestClassify_CancelledIsATimeoutNotAnUnknownFailure(t *testing.T) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}}) // never dialed
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	s := New(cli)
	for name, cancelled := range map[string]error{
		"context":          context.Canceled,
		"gRPC":             status.Error(codes.Canceled, "context canceled"),
		"wrapped":          fmt.Errorf("call: %w", context.Canceled),
		"from the context": status.FromContextError(context.Canceled).Err(),
	} {
		t.Run(name, func(t *testing.T) {
			if got := s.classifyRead(cancelled); !errors.Is(got, ErrUnavailable) || errors.Is(got, ErrTimeout) {
				t.Errorf("read: got %v, want ErrUnavailable", got)
			}
			if got := s.classifyWrite(cancelled); !errors.Is(got, ErrTimeout) || errors.Is(got, ErrUnavailable) {
				t.Errorf("write: got %v, want ErrTimeout", got)
			}
		})
	}
}

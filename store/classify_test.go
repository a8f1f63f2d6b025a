package store

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestClassify_TellsUnappliedWritesFromUnknownOutcomes checks how etcd
// failures become the store's errors, for reads and for transactions: a
// transaction is ErrUnavailable only when it is known not to have been
// applied, ErrTimeout when its outcome is unknown; a read is never
// ErrTimeout.
func TestClassify_TellsUnappliedWritesFromUnknownOutcomes(t *testing.T) {
	pickerDeadline := status.Error(codes.DeadlineExceeded, "context deadline exceeded while waiting for connections to become ready")
	balancer := status.Error(codes.DeadlineExceeded, `latest balancer error: connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`)
	lost := status.Error(codes.Unavailable, "error reading from server: EOF")
	cases := []struct {
		name        string
		err         error
		read, write error
	}{
		{"no leader", rpctypes.ErrNoLeader, ErrUnavailable, ErrUnavailable},
		{"no leader (gRPC)", rpctypes.ErrGRPCNoLeader, ErrUnavailable, ErrUnavailable},
		{"no endpoints", clientv3.ErrNoAvailableEndpoints, ErrUnavailable, ErrUnavailable},
		{"too many requests", rpctypes.ErrTooManyRequests, ErrUnavailable, ErrUnavailable},
		{"never sent: picker deadline", pickerDeadline, ErrUnavailable, ErrUnavailable},
		{"never sent: balancer error", balancer, ErrUnavailable, ErrUnavailable},
		{"connection lost in flight", lost, ErrUnavailable, ErrTimeout},
		{"member stopped in flight", rpctypes.ErrStopped, ErrUnavailable, ErrTimeout},
		{"raft stopped in flight", status.Error(codes.Unknown, "raft: stopped"), ErrUnavailable, ErrTimeout},
		{"raft dropped the proposal", status.Error(codes.Unknown, "raft proposal dropped"), ErrUnavailable, ErrUnavailable},
		{"deadline", context.DeadlineExceeded, ErrUnavailable, ErrTimeout},
		{"deadline (gRPC)", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), ErrUnavailable, ErrTimeout},
		{"etcd timeout", rpctypes.ErrTimeout, ErrUnavailable, ErrTimeout},
		{"leader failed", rpctypes.ErrTimeoutDueToLeaderFail, ErrUnavailable, ErrTimeout},
		{"connection lost (etcd)", rpctypes.ErrTimeoutDueToConnectionLost, ErrUnavailable, ErrTimeout},
		{"compacted", rpctypes.ErrCompacted, ErrCompacted, ErrCompacted},
		{"future revision", rpctypes.ErrFutureRev, ErrFutureRevision, ErrFutureRevision},
		{"no space", rpctypes.ErrNoSpace, ErrNoSpace, ErrNoSpace},
		{"too large", rpctypes.ErrRequestTooLarge, ErrTooLarge, ErrTooLarge},
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}}) // never dialed
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	s := New(cli)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wrapped := fmt.Errorf("call: %w", tc.err)
			if got := s.classifyRead(wrapped); !errors.Is(got, tc.read) {
				t.Errorf("read: got %v, want %v", got, tc.read)
			}
			if got := s.classifyRead(wrapped); errors.Is(got, ErrTimeout) {
				t.Errorf("read: got %v, a timeout", got)
			}
			got := s.classifyWrite(wrapped)
			if !errors.Is(got, tc.write) {
				t.Errorf("write: got %v, want %v", got, tc.write)
			}
			if errors.Is(got, ErrUnavailable) && errors.Is(got, ErrTimeout) {
				t.Errorf("write: got %v, both unavailable and timed out", got)
			}
		})
	}
}

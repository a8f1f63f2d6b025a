// Package leader runs work in exactly one of several cairn processes at a
// time, elected through an etcd lease (clientv3/concurrency). When the
// leader stops it resigns and another process takes over at once; when it
// dies, its lease expires after the TTL and another takes over then.
package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Prefix is the etcd key prefix of cairn's elections.
const Prefix = "/cairn/leader/"

// Options configures an election.
type Options struct {
	// Name of the election; processes with the same name compete.
	Name string
	// Identity of this process, stored as the leader's value (e.g. its
	// listen address).
	Identity string
	// TTL of the lease: how long a dead leader blocks a new one. Default 5s.
	TTL time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// Run campaigns until ctx is done. Each time this process is elected it
// calls lead with a context that is cancelled when leadership is lost (the
// lease expired or could not be renewed) or ctx is done, and waits for lead
// to return before campaigning again. Run returns nil when ctx is done.
func Run(ctx context.Context, cli *clientv3.Client, opts Options, lead func(ctx context.Context)) error {
	if opts.TTL == 0 {
		opts.TTL = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	log := opts.Logger.With("election", opts.Name, "identity", opts.Identity)
	for ctx.Err() == nil {
		if err := term(ctx, cli, opts, log, lead); err != nil && ctx.Err() == nil {
			log.Warn("leader election failed; retrying", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
	return nil
}

// term is one session: campaign, lead, resign.
func term(ctx context.Context, cli *clientv3.Client, opts Options, log *slog.Logger, lead func(ctx context.Context)) error {
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(int(opts.TTL.Seconds()+0.5)), concurrency.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("leader: new session: %w", err)
	}
	defer sess.Close() // revokes the lease: followers see the leader key vanish at once
	el := concurrency.NewElection(sess, Prefix+opts.Name)
	if err := el.Campaign(ctx, opts.Identity); err != nil {
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return fmt.Errorf("leader: campaign: %w", err)
	}
	log.Info("elected leader")
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		lead(lctx)
	}()
	select {
	case <-sess.Done():
		log.Warn("leadership lost: the lease expired")
	case <-ctx.Done():
	case <-done:
	}
	cancel()
	<-done
	rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer rcancel()
	if err := el.Resign(rctx); err != nil {
		log.Debug("resign", "err", err)
	}
	log.Info("stepped down")
	return nil
}

// Current returns the identity of the current leader of the election name,
// or "" when there is none.
func Current(ctx context.Context, cli *clientv3.Client, name string) (string, error) {
	resp, err := cli.Get(ctx, Prefix+name+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1))
	if err != nil {
		return "", fmt.Errorf("leader: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return "", nil
	}
	return string(resp.Kvs[0].Value), nil
}

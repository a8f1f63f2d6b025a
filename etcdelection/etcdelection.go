// Package etcdelection runs work in exactly one of several cairn processes
// at a time, elected through an etcd lease (clientv3/concurrency), below
// the API: the store's compaction, which only API servers run. When the
// leader stops it resigns and another process takes over at once; when it
// dies, its lease expires after the TTL and another takes over then.
//
// It is not how controllers are elected: they hold the API's Lease object
// (package lease), so that a controller process needs no etcd access.
package etcdelection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
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
// calls lead with a context that is cancelled when leadership is lost or
// ctx is done (and that Guard fences work with), and waits for lead to return before campaigning again.
// Leadership is lost a third of the TTL before the lease could have
// expired in etcd's eyes (see keeper), or when it did expire. A campaign
// that returns without a live lease and election key (etcd's Campaign can,
// after an outage) is not leadership: lead is not called, and the process
// campaigns again with a new lease. Run returns nil when ctx is done.
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

// term is one session: campaign, confirm, lead, resign.
func term(ctx context.Context, cli *clientv3.Client, opts Options, log *slog.Logger, lead func(ctx context.Context)) error {
	ttl := max(1, int64(math.Ceil(opts.TTL.Seconds())))
	g, err := cli.Grant(ctx, ttl)
	if err != nil {
		return fmt.Errorf("leader: grant a lease: %w", err)
	}
	sess, err := concurrency.NewSession(cli, concurrency.WithLease(g.ID), concurrency.WithContext(ctx))
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
	k := &keeper{cli: cli, id: g.ID, ttl: time.Duration(ttl) * time.Second}
	if err := k.confirm(ctx, el); err != nil {
		if ctx.Err() == nil {
			log.Warn("not leading: the campaign ended without a live lease; campaigning again", "err", err)
		}
		return nil
	}
	log.Info("elected leader")
	h := &held{cli: cli, name: opts.Name, key: el.Key(), rev: el.Rev()}
	h.setUntil(k.until)
	k.published = h
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lctx = context.WithValue(lctx, heldKey{}, h)
	deadline := time.AfterFunc(time.Until(k.until), cancel)
	defer deadline.Stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if lctx.Err() == nil {
			lead(lctx)
		}
	}()
	tick := time.NewTicker(k.ttl / 5)
	defer tick.Stop()
hold:
	for {
		select {
		case <-sess.Done():
			log.Warn("leadership lost: the lease expired")
			break hold
		case <-lctx.Done():
			if ctx.Err() == nil {
				log.Warn("leadership lost: no keepalive confirmed in time")
			}
			break hold
		case <-done:
			break hold
		case <-tick.C:
			err := k.renew(lctx, deadline)
			if errors.Is(err, rpctypes.ErrLeaseNotFound) {
				log.Warn("leadership lost: the lease expired")
				break hold
			}
			if err != nil && lctx.Err() == nil {
				log.Debug("lease keepalive failed; retrying", "err", err)
			}
		}
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

// keeper knows until when this process may act on its etcd lease. etcd
// expires a lease TTL after the keepalive it last processed, by the etcd
// leader's clock; a keepalive is processed after this process sent it. So
// the lease lives at least until the send time of the last confirmed
// keepalive plus the TTL it confirmed. The leader stops a third of the TTL
// before that: the margin for clock rates and for lead to notice.
type keeper struct {
	cli *clientv3.Client
	id  clientv3.LeaseID
	ttl time.Duration
	// until is when lead must have been told to stop.
	until time.Time
	// published, once set, gets every new until (for Guard).
	published *held
}

// confirm checks, after a campaign returned, that this process really
// leads: its lease is alive (a keepalive confirms it, and sets until) and
// its election key is still there, held by that lease. A campaign can
// return success after the process's own lease expired: it waits for the
// keys before its own to be deleted, and when every lease expired during
// an outage, its own key went with them. It also refuses a confirmation
// that leaves less than a fifth of the TTL to lead. Errors:
// rpctypes.ErrLeaseNotFound for an expired lease, others describing the
// failure.
func (k *keeper) confirm(ctx context.Context, el *concurrency.Election) error {
	start := time.Now()
	kctx, cancel := context.WithTimeout(ctx, k.ttl/3)
	defer cancel()
	ka, err := k.cli.KeepAliveOnce(kctx, k.id)
	if err != nil {
		return fmt.Errorf("leader: confirm the lease: %w", err)
	}
	k.until = start.Add(time.Duration(ka.TTL)*time.Second - k.ttl/3)
	resp, err := k.cli.Get(kctx, el.Key())
	if err != nil {
		return fmt.Errorf("leader: read the election key: %w", err)
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].Lease != int64(k.id) || resp.Kvs[0].CreateRevision != el.Rev() {
		return errors.New("leader: the election key is gone")
	}
	if time.Until(k.until) < k.ttl/5 {
		return errors.New("leader: the lease was confirmed too late to lead")
	}
	return nil
}

// renew sends one keepalive, bounded by the time left, and on its
// confirmation moves until (and deadline, the timer that stops lead) on.
// It returns the keepalive's error (rpctypes.ErrLeaseNotFound: expired).
func (k *keeper) renew(ctx context.Context, deadline *time.Timer) error {
	start := time.Now()
	kctx, cancel := context.WithDeadline(ctx, k.until)
	defer cancel()
	ka, err := k.cli.KeepAliveOnce(kctx, k.id)
	if err != nil {
		return err
	}
	if deadline.Stop() { // else it fired while the keepalive was in flight
		k.until = start.Add(time.Duration(ka.TTL)*time.Second - k.ttl/3)
		if k.published != nil {
			k.published.setUntil(k.until)
		}
		deadline.Reset(time.Until(k.until))
	}
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

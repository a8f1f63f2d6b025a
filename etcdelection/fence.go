package etcdelection

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// FencePrefix is the etcd key prefix of the guarded keys: Guard writes
// FencePrefix+name, in a transaction conditioned on the election key.
const FencePrefix = "/cairn/fence/"

// Errors of Guard.
var (
	// ErrNotLeader: the election key of this term is gone (its lease
	// expired or was revoked, another process leads): nothing was
	// written, and the guarded work must not happen.
	ErrNotLeader = errors.New("etcdelection: this process no longer holds the election")
	// ErrExpired: by this process's monotonic clock the term's lease may
	// have expired (no keepalive confirmed in time); nothing was written.
	ErrExpired = errors.New("etcdelection: the term's lease may have expired")
	// ErrNoTerm: the context is not a lead context of Run.
	ErrNoTerm = errors.New("etcdelection: the context carries no term (call Guard with the context Run gave lead)")
)

// held is what Guard knows of a term: its election key, the key's create
// revision, and until when it may act (the keeper's, published for other
// goroutines).
type held struct {
	cli   *clientv3.Client
	name  string
	key   string
	rev   int64
	until atomic.Pointer[time.Time]
}

type heldKey struct{}

func (h *held) setUntil(t time.Time) { h.until.Store(&t) }

// Guard records value under FencePrefix+name (the election's name) in one
// etcd transaction that commits only while this term's election key
// exists with its create revision: the work the caller does next (a
// compaction) is that of the process that holds the election, or of none.
// It first checks the term by this process's monotonic clock, so a
// process resumed after a pause refuses before any request. The window
// that remains is between Guard's commit and the work. ctx must be the
// context Run gave lead (or derive from it). It blocks for one
// transaction. Errors: ErrNoTerm, ErrExpired, ErrNotLeader, ctx's, etcd's.
func Guard(ctx context.Context, value string) error {
	h, _ := ctx.Value(heldKey{}).(*held)
	if h == nil {
		return ErrNoTerm
	}
	if until := h.until.Load(); until == nil || !time.Now().Before(*until) {
		return ErrExpired
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	resp, err := h.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(h.key), "=", h.rev)).
		Then(clientv3.OpPut(FencePrefix+h.name, value)).
		Commit()
	if err != nil {
		return fmt.Errorf("etcdelection: guard %s: %w", h.name, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: election key %s (revision %d) is gone", ErrNotLeader, h.key, h.rev)
	}
	return nil
}

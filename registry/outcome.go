package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// What a write does when the store fails under it (run, in commit.go).
//
// A commit that fails with store.ErrUnavailable was not applied: under a
// store timeout (store.WithTimeout) it is planned and sent again after a
// backoff, while the operation's deadline (store.Deadline) allows; the
// write then fails ServiceUnavailable.
//
// A commit that fails with store.ErrTimeout reached the store, and its
// outcome is unknown. It is kept as an unsure commit, and before the write
// plans again it learns whether that commit was applied, by reading one
// object the commit writes (its witness, see check):
//
//   - a create: the object exists with the create's uid: applied (at its
//     create revision); absent: not applied yet; another uid: never (its
//     condition "absent" fails);
//   - an update or a deletion mark: the object holds exactly the value
//     written: applied; it is still at the revision the write was
//     conditioned on: not applied yet; else the outcome cannot be told
//     (another write came after it, or instead of it);
//   - a removal: the object is gone, or was created again since: applied;
//     the same incarnation is still there: not applied.
//
// "Not applied yet" means that the commit may still be applied (etcd can
// commit a proposal after its client gave up), but then no later attempt
// of the same write can: every attempt is conditioned on the state the
// first was planned on (the object absent, or at the revision read), and
// the first one applied makes the others' conditions fail. So the write is
// retried; and whenever an attempt fails its conditions, the unsure
// commits are checked again first, so that a late success of an earlier
// attempt is answered as the success it is, never as a Conflict or
// AlreadyExists, and a generated name is never created twice.
//
// A write whose unsure commits cannot be settled (the store still does not
// answer when the deadline passes, or the outcome cannot be told) fails
// with an *unknownOutcome: a Timeout naming the objects to read to find
// out, and, for a create with a generated name, its request id label.

// verdict is what a witness says of a commit of unknown outcome.
type verdict int

const (
	// notYet: not applied; it may still be, excluding any other attempt.
	notYet verdict = iota
	// applied: the commit was applied.
	applied
	// never: not applied, and it no longer can be.
	never
	// unknowable: the witness changed since; the outcome cannot be told.
	unknowable
)

// errUnknowable is the cause of an unknownOutcome whose commit's witness
// changed since, so that nothing tells whether it was applied.
var errUnknowable = errors.New("registry: the objects the write changes have changed since: its outcome cannot be told")

// transient reports the store failures after which a write may be sent
// again (see above).
func transient(err error) bool {
	return errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrTimeout)
}

// settle learns whether one of the unsure commits was applied: it returns
// its results and true; or false when none was (each may still be but
// excludes any other attempt, or no longer can be). It fails with
// errUnknowable when a commit's outcome cannot be told, or with the
// store's error when the store does not answer. It blocks on one store
// read per unsure commit.
func (r *Registry) settle(ctx context.Context, unsure [][]*plan) ([]TxnResult, bool, error) {
	for _, plans := range unsure {
		w := witness(plans)
		if w == nil {
			if writes(plans) {
				return nil, false, errUnknowable
			}
			continue // it wrote nothing
		}
		v, rev, err := r.check(ctx, w)
		switch {
		case err != nil:
			return nil, false, err
		case v == applied:
			return results(plans, rev), true, nil
		case v == unknowable:
			return nil, false, errUnknowable
		}
	}
	return nil, false, nil
}

// witness is the plan of plans whose object tells best whether their
// commit was applied (a transaction applies whole or not at all): a
// create, else an update or mark, else a removal; nil when no plan writes
// an object.
func witness(plans []*plan) *plan {
	var best *plan
	rank := func(p *plan) int {
		switch {
		case p.prev == 0:
			return 3
		case p.raw != nil:
			return 2
		}
		return 1
	}
	for _, p := range plans {
		if p.k != nil && p.write && (best == nil || rank(p) > rank(best)) {
			best = p
		}
	}
	return best
}

// writes reports whether a commit of plans writes anything.
func writes(plans []*plan) bool {
	for _, p := range plans {
		if len(p.ops) > 0 {
			return true
		}
	}
	return false
}

// check reads the object of p, a plan of a commit of unknown outcome, and
// tells what became of the commit (see the rules above), with the
// revision it was applied at when known (0 for a removal).
func (r *Registry) check(ctx context.Context, p *plan) (verdict, int64, error) {
	kv, err := r.store.Get(ctx, p.key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		switch {
		case p.gone:
			return applied, 0, nil
		case p.prev == 0:
			return notYet, 0, nil
		}
		return unknowable, 0, nil // updated, then removed by another write?
	case err != nil:
		return 0, 0, err
	}
	switch {
	case p.gone && kv.CreateRevision > p.prev:
		return applied, 0, nil // removed, and created again since
	case p.gone && kv.ModRevision == p.prev:
		return notYet, 0, nil
	case p.gone:
		return never, 0, nil // the same incarnation, changed by another write
	case p.prev == 0:
		obj, err := r.decode(p.k, kv)
		if err != nil {
			return unknowable, 0, nil
		}
		if obj.UID == p.out.UID {
			return applied, kv.CreateRevision, nil
		}
		return never, 0, nil
	case bytes.Equal(kv.Value, p.raw):
		return applied, kv.ModRevision, nil
	case kv.ModRevision == p.prev:
		return notYet, 0, nil
	}
	return unknowable, 0, nil
}

// unknown is the failure of a write (items) whose unsure commits could not
// be settled, for cause.
func unknown(unsure [][]*plan, items []*txnItem, cause error) error {
	e := &unknownOutcome{cause: cause}
	seen := map[string]bool{}
	for _, plans := range unsure {
		for _, p := range plans {
			if p.k == nil || !p.write || p.out == nil {
				continue
			}
			name := p.out.Name
			if p.k.Namespaced {
				name = p.out.Namespace + "/" + name
			}
			obj := fmt.Sprintf("%s %q", p.k.Kind, name)
			if seen[obj] {
				continue
			}
			seen[obj] = true
			e.objects = append(e.objects, obj)
			if e.kind == "" {
				e.kind, e.name = p.k.Kind, p.out.Name
			}
		}
	}
	for _, it := range items {
		if it.op == OpCreate && it.generate && it.obj.Labels[api.LabelRequestID] != "" {
			e.requestID = it.obj.Labels[api.LabelRequestID]
			break
		}
	}
	return e
}

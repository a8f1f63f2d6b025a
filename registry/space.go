package registry

import (
	"fmt"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// DefaultMaxObjectBytes is the default of Options.MaxObjectBytes: what
// etcd accepts in one request by default, and small enough that a
// transaction holds two objects of this size (see store.MaxTxnBytes).
const DefaultMaxObjectBytes = 1536 << 10

// growthSlack is how much larger an update may make an object and still
// count as not adding data: timestamps and counters change length.
const growthSlack = 1 << 10

// checkObjectSize refuses (RequestEntityTooLarge) the object out of k,
// encoded as raw, when raw exceeds MaxObjectBytes and, for an update, the
// stored size was (an object stored under an earlier, larger limit may
// still shrink or lose finalizers). was is the stored size, 0 for a
// create.
func (r *Registry) checkObjectSize(k *Kind, out *api.Object, raw []byte, was int) error {
	n, limit := len(raw), r.opts.MaxObjectBytes
	if int64(n) <= limit || (was > 0 && n <= was) {
		return nil
	}
	st := api.NewStatus(api.ReasonTooLarge, "%s %q is too large: it is stored in %d bytes (%s), more than the %d bytes (%s) the server accepts for one object",
		k.Kind, out.Name, n, store.FormatBytes(int64(n)), limit, store.FormatBytes(limit))
	st.Details = &api.StatusDetails{Kind: k.Kind, Name: out.Name}
	return st
}

// checkSpace refuses plans (with a *store.SpaceError) that do not fit in
// the store: when one of them adds data, under its soft limit (and not at
// all while the store is full); otherwise, under its quota. See
// store.Fits.
func (r *Registry) checkSpace(plans []*plan) error {
	grow := false
	var ops []store.Op
	for _, p := range plans {
		grow = grow || p.grows
		ops = append(ops, p.ops...)
	}
	return r.store.Fits(grow, ops...)
}

// grows reports whether an update from a stored value of was bytes to raw
// adds data to the store.
func grows(raw []byte, was int) bool { return len(raw) > was+growthSlack }

// insufficientStorage is the API error of a write refused for lack of
// space: InsufficientStorage, naming the quota and what to do.
func insufficientStorage(se *store.SpaceError, kind, name string) *api.Status {
	sp := se.Space
	what := "the store is full: " + sp.String()
	if se.Need > 0 && !sp.Full {
		what = fmt.Sprintf("the store has no room for this write of %s: %s, and writes stop at %s",
			store.FormatBytes(se.Need), sp.String(), store.FormatBytes(se.Limit))
	}
	st := api.NewStatus(api.ReasonInsufficientStorage, "%s. Reads and deletions still work: delete objects you no longer need, "+
		"and cairn compacts and defragments the store and accepts writes again by itself; or raise the quota", what)
	if kind != "" {
		st.Details = &api.StatusDetails{Kind: kind, Name: name}
	}
	return st
}

// tooLarge is the API error of a transaction larger than etcd accepts.
func tooLarge(se *store.SizeError) *api.Status {
	if se.Limit == 0 {
		return api.NewStatus(api.ReasonTooLarge, "the write is larger than etcd accepts in one request (its --max-request-bytes): "+
			"write smaller objects, or run etcd with --max-request-bytes of at least %s", store.FormatBytes(store.MaxRequestBytes))
	}
	return api.NewStatus(api.ReasonTooLarge, "the transaction is too large: it encodes to %d bytes (%s), and one etcd request holds at most %d (%s): split it, or write smaller objects",
		se.Size, store.FormatBytes(se.Size), se.Limit, store.FormatBytes(se.Limit))
}

// markDoesNotFit is the error of a deletion on a full store, where the
// deletion mark of obj, which has finalizers, cannot be written.
func (r *Registry) markDoesNotFit(k *Kind, obj *api.Object) *api.Status {
	st := api.NewStatus(api.ReasonInsufficientStorage, "the store is full (%s), so the deletion mark of %s %q cannot be written, "+
		"and it has finalizers (%s), so it cannot be removed at once. Delete objects without finalizers to free space "+
		"(cairn then accepts writes again by itself), or delete it with force=true (admins only), which skips its finalizers",
		r.store.Space(), k.Kind, obj.Name, strings.Join(obj.Finalizers, ", "))
	st.Details = &api.StatusDetails{Kind: k.Kind, Name: obj.Name}
	return st
}

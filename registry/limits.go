package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry/internal/usage"
	"cairn.dev/cairn/store"
)

// Per-namespace limits: a Namespace declares them in spec.limits; a limit
// it leaves unset is the registry's default (Options.NamespaceMaxObjects,
// Options.NamespaceMaxBytes). Usage counts every namespaced kind: objects,
// and the bytes of their stored encodings (encrypted, for encrypted kinds).
// The registry counts it in memory (package registry/internal/usage, built
// by Init and kept by a watch) and checks it where every write commits
// (commitAll), so no write pays a read for it.
//
// A write that would take its namespace over a limit is refused with
// Forbidden; deletions, deletion marks, writes to objects being deleted
// and writes that do not grow their namespace always pass. A Txn's writes
// count together. See the usage package for how far several servers can
// overshoot a limit.
const (
	// DefaultNamespaceMaxObjects is Options.NamespaceMaxObjects' default.
	DefaultNamespaceMaxObjects = 50_000
	// DefaultNamespaceMaxBytes is Options.NamespaceMaxBytes' default.
	DefaultNamespaceMaxBytes = 512 << 20
)

// newUsage builds the registry's usage tracker (started by Init).
func (r *Registry) newUsage() *usage.Tracker {
	return usage.New(r.store, usage.Options{
		Prefix:          KeyPrefix,
		NamespacePrefix: r.key(r.kinds[api.KindNamespace], "", ""),
		Defaults: usage.Limits{
			Objects: defaultLimit(r.opts.NamespaceMaxObjects, DefaultNamespaceMaxObjects),
			Bytes:   defaultLimit(r.opts.NamespaceMaxBytes, DefaultNamespaceMaxBytes),
		},
		ParseLimits: parseLimits,
		Logger:      r.opts.Logger,
	})
}

// defaultLimit is an option's limit: def for 0, none for a negative value.
func defaultLimit(v, def int64) int64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return usage.Unset
	}
	return v
}

// commitWithinLimits commits conds and ops, the transaction of plans, if
// the namespaces they grow stay within their limits (else Forbidden,
// writing nothing), and counts what they wrote. Its errors are the store's
// and that Forbidden; a write fenced by ctx (api.WithFence) commits only
// while its fence holds (see txn).
func (r *Registry) commitWithinLimits(ctx context.Context, plans []*plan, conds []store.Cond, ops []store.Op, dry bool) (int64, error) {
	res, err := r.usage.Reserve(changesOf(plans))
	if err != nil {
		return 0, err
	}
	if dry {
		defer res.Cancel()
		return r.txn(ctx, conds)
	}
	rev, err := r.txn(ctx, conds, ops...)
	if err != nil {
		res.Cancel()
		return 0, err
	}
	res.Commit(rev)
	return rev, nil
}

// changesOf are the object writes of plans, for the usage tracker.
func changesOf(plans []*plan) []usage.Change {
	out := make([]usage.Change, 0, len(plans))
	for _, p := range plans {
		if p.k == nil || !p.write {
			continue
		}
		c := usage.Change{Key: p.key, Size: p.size, Deleted: p.gone, Exempt: p.out != nil && p.out.Deleting()}
		if isNamespace(p.k) && !p.gone {
			c.Limits = declaredLimits(p.out.Field(api.FieldSpec))
		}
		out = append(out, c)
	}
	return out
}

// declaredLimits are the limits a Namespace's spec declares (validated by
// the Namespace kind); Unset for those it leaves to the defaults.
func declaredLimits(spec json.RawMessage) usage.Limits {
	l := usage.Limits{Objects: usage.Unset, Bytes: usage.Unset}
	var s api.NamespaceSpec
	if len(spec) == 0 || json.Unmarshal(spec, &s) != nil || s.Limits == nil {
		return l
	}
	if s.Limits.Objects != nil {
		l.Objects = *s.Limits.Objects
	}
	if s.Limits.Bytes != nil {
		if n, ok := s.Limits.Bytes.AsInt64(); ok {
			l.Bytes = n
		}
	}
	return l
}

// parseLimits are the limits a stored Namespace declares.
func parseLimits(value []byte) (usage.Limits, error) {
	var ns struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(value, &ns); err != nil {
		return usage.Limits{}, fmt.Errorf("registry: stored Namespace: %w", err)
	}
	return declaredLimits(ns.Spec), nil
}

// limitExceeded is the API error of a write refused by a namespace limit.
func limitExceeded(e *usage.ExceededError) *api.Status {
	st := api.NewStatus(api.ReasonForbidden, "%s", e.Error())
	st.Details = &api.StatusDetails{Kind: api.KindNamespace, Name: e.Namespace,
		Causes: []api.StatusCause{{Field: e.Field(), Type: "LimitReached", Message: e.Error()}}}
	return st
}

// observeUsage fills the status.usage of ns, a Namespace just read from the
// store (the caller's own copy), with what this registry counts.
func (r *Registry) observeUsage(ns *api.Object) error {
	var status api.NamespaceStatus
	if raw := ns.Field(api.FieldStatus); len(raw) > 0 {
		if err := json.Unmarshal(raw, &status); err != nil {
			return fmt.Errorf("registry: stored Namespace %q: status: %w", ns.Name, err)
		}
	}
	rep := r.usage.Usage(ns.Name)
	u := &api.NamespaceUsage{Objects: rep.Objects, Bytes: rep.Bytes}
	if rep.Revision > 0 {
		u.ObservedRevision = strconv.FormatInt(rep.Revision, 10)
	}
	if rep.Limits.Objects != usage.Unset {
		u.Limits.Objects = &rep.Limits.Objects
	}
	if rep.Limits.Bytes != usage.Unset {
		u.Limits.Bytes = resource.NewQuantity(rep.Limits.Bytes, resource.BinarySI)
	}
	status.Usage = u
	raw, err := json.Marshal(&status)
	if err != nil {
		return fmt.Errorf("registry: Namespace %q: status: %w", ns.Name, err)
	}
	ns.SetField(api.FieldStatus, raw)
	return nil
}

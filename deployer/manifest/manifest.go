// Package manifest is the deployer of deploy items of type `manifest`: it
// puts Kubernetes objects into the cluster of the item's Target with
// server-side apply, waits until they are ready, exports values read from
// them, and deletes them with the item (DESIGN.md "Kubernetes").
//
// A run applies every entry of config.manifests in order with the field
// manager `cairn/<namespace>/<item>` and without force, so that two items
// managing one field fail with the conflict named; records the objects in
// status.providerStatus.managedResources; deletes the objects of the
// previous record that are no longer rendered (policy manage); then
// checks readiness (package kube) until every object is ready, and reads
// the exports. A cluster that does not answer fails nothing at once: the
// run retries with backoff until the item's progressing timeout
// (spec.timeout, else Options.ProgressingTimeout), saying so in lastError
// and the trace. Deletion deletes the objects of policy manage one at a
// time, in reverse order of application with CRDs and Namespaces last,
// waiting until each is gone.
package manifest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/deployer"
	"cairn.dev/cairn/deployer/kube"
	"cairn.dev/cairn/deployer/kube/config"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/trace"
)

// DefaultProgressingTimeout bounds a run whose item has no spec.timeout
// when Options.ProgressingTimeout is zero (the timeout controller's
// default).
const DefaultProgressingTimeout = 10 * time.Minute

// Options configures the manifest deployer.
type Options struct {
	// Clusters gives the Targets' clusters; default one on the client.
	Clusters *kube.Clusters
	// ProgressingTimeout bounds a run of an item without spec.timeout;
	// zero: DefaultProgressingTimeout; negative: unbounded.
	ProgressingTimeout time.Duration
	// Poll is the wait between two readiness checks; default 2s.
	Poll time.Duration
	// Workers is deployer.Options.Workers.
	Workers int
	// Now is the clock of deadlines; default time.Now.
	Now func() time.Time
}

// Setup adds the manifest deployer ("deployer-manifest") to a manager's
// term.
func Setup(t *manager.Term, opts Options) error {
	d := New(t.Client, opts)
	d.opts.Clusters.ForgetDeleted(t) // a deleted Target's client goes
	return deployer.Setup(t, deployer.Options{Type: config.TypeManifest, Deployer: d, Workers: opts.Workers, Now: opts.Now})
}

// Deployer deploys manifest items. Its methods are called by the deployer
// library, one at a time per item.
type Deployer struct {
	opts Options
	mu   sync.Mutex
	runs map[string]*run // by item uid
}

// run is what the deployer remembers of an item's current run, in memory
// (a restart applies again, which server-side apply makes harmless).
type run struct {
	id       string
	applied  bool
	attempts int       // retries of an unanswered cluster
	since    time.Time // when the deletion first found the cluster silent
	red      redactor  // the values of the item's Secrets
}

// New returns the deployer acting through c.
func New(c client.Interface, opts Options) *Deployer {
	if opts.Clusters == nil {
		opts.Clusters = kube.NewClusters(c, kube.Options{})
	}
	if opts.ProgressingTimeout == 0 {
		opts.ProgressingTimeout = DefaultProgressingTimeout
	}
	if opts.Poll <= 0 {
		opts.Poll = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Deployer{opts: opts, runs: map[string]*run{}}
}

// FieldManager is the server-side apply field manager of item ns/name.
func FieldManager(ns, name string) string { return "cairn/" + ns + "/" + name }

// state returns the memory of item's current run, fresh for a new run.
func (d *Deployer) state(item *deployer.Item) *run {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.runs[item.UID]
	if r == nil || r.id != item.Run {
		r = &run{id: item.Run}
		d.runs[item.UID] = r
	}
	return r
}

// Abort forgets the item's run: nothing of it runs between two calls.
func (d *Deployer) Abort(_ context.Context, item *deployer.Item) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.runs, item.UID)
	return nil
}

// Forget forgets the item once it is gone.
func (d *Deployer) Forget(ctx context.Context, item *deployer.Item) error { return d.Abort(ctx, item) }

// deadline is when the item's run must have ended.
func (d *Deployer) deadline(item *deployer.Item) (time.Time, bool) {
	return Deadline(item.Status.LastReconcileTime, specTimeout(item), d.opts.ProgressingTimeout)
}

// expired reports whether the run's deadline has passed.
func (d *Deployer) expired(item *deployer.Item) bool {
	dl, ok := d.deadline(item)
	return ok && !d.opts.Now().Before(dl)
}

// cluster returns the item's cluster, or the Failed outcome of an
// unusable Target (with hint appended to its message).
func (d *Deployer) cluster(ctx context.Context, item *deployer.Item, hint string) (*kube.Cluster, *deployer.Outcome, error) {
	cl, err := d.opts.Clusters.For(ctx, item)
	if errors.Is(err, kube.ErrTarget) {
		msg := strings.TrimPrefix(err.Error(), kube.ErrTarget.Error()+": ")
		out := deployer.Failed(api.ReasonInvalidTarget, "%s%s", msg, hint)
		return nil, &out, nil
	}
	return cl, nil, err
}

// Reconcile applies the item's objects, then waits for their readiness
// and reads the exports; see the package doc.
func (d *Deployer) Reconcile(ctx context.Context, item *deployer.Item) (deployer.Outcome, error) {
	m, objs, values, failed, err := parse(ctx, item)
	if failed != nil || err != nil {
		return deref(failed), err
	}
	cl, failed, err := d.cluster(ctx, item, "")
	if failed != nil || err != nil {
		return deref(failed), err
	}
	st := d.state(item)
	st.red = secretValues(objs, values)
	out, err := d.deploy(ctx, item, cl, m, objs, st)
	if kube.Unreachable(err) {
		return d.unreachable(ctx, item, st, err), nil
	}
	if err == nil {
		st.attempts = 0
	}
	return st.red.outcome(item, out), st.red.err(err)
}

func deref(o *deployer.Outcome) deployer.Outcome {
	if o == nil {
		return deployer.Outcome{}
	}
	return *o
}

// unreachable answers a cluster that did not: retry with backoff until
// the deadline, saying so, then fail.
func (d *Deployer) unreachable(ctx context.Context, item *deployer.Item, st *run, err error) deployer.Outcome {
	if d.expired(item) {
		return deployer.Failed(api.ReasonClusterUnreachable, "the cluster of Target %s did not answer within the progressing timeout: %v",
			item.Spec.Target, err)
	}
	st.attempts++
	wait := Backoff(st.attempts)
	msg := fmt.Sprintf("the cluster of Target %s does not answer (%v): retrying with backoff", item.Spec.Target, err)
	if dl, ok := d.deadline(item); ok {
		msg += " until the progressing timeout at " + dl.UTC().Format(time.RFC3339)
		// Look again at the deadline, to fail naming the cluster before the
		// timeout controller aborts the item.
		wait = max(min(wait, dl.Sub(d.opts.Now())), 100*time.Millisecond) // zero would wait for a Notify
	}
	trace.Check(ctx, "%s; next attempt in %s", msg, wait)
	item.Status.LastError = &api.LastError{Reason: api.ReasonClusterUnreachable, Message: msg}
	return deployer.InProgress(wait)
}

// providerStatus decodes the item's status.providerStatus (empty when it
// has none or another shape).
func providerStatus(item *deployer.Item) kube.ProviderStatus {
	var ps kube.ProviderStatus
	_ = json.Unmarshal(item.Status.ProviderStatus, &ps)
	return ps
}

// setProviderStatus stores ps, with its Ready count set, as the item's
// status.providerStatus.
func setProviderStatus(item *deployer.Item, ps *kube.ProviderStatus) {
	ps.SetReady()
	raw, err := json.Marshal(ps)
	if err == nil {
		item.Status.ProviderStatus = raw
	}
}

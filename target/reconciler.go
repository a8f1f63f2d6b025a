package target

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/informer"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/trace"
)

// Defaults of Options.
const (
	DefaultInterval     = 60 * time.Second
	DefaultProbeTimeout = 10 * time.Second
)

// secretIndex indexes Targets by the key ("ns/name") of the Secret their
// kubeconfig comes from.
const secretIndex = "target.kubeconfigSecret"

// Options configures the target controller. The zero value is usable.
type Options struct {
	// Interval is how often a Target is checked again when nothing
	// changes; default DefaultInterval.
	Interval time.Duration
	// ProbeTimeout bounds one request for a cluster's version; default
	// DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// Clients is the cache of the Targets' clients; default a new one.
	// Deployers that deploy to the clusters share it.
	Clients *Clients
	// Workers is the number of Targets checked concurrently; default 4.
	Workers int
	// Now is the clock of lastTransitionTime; default time.Now.
	Now func() time.Time
}

// Reconciler checks kubernetes-cluster Targets. It is level-based: each
// Reconcile re-reads the Target and its Secret from the shared informers,
// probes the cluster and writes the status when it changed; it requeues
// the Target after Options.Interval.
type Reconciler struct {
	c       client.Interface
	opts    Options
	targets *informer.Informer
	secrets *informer.Informer
	written controller.Written
}

// newReconciler builds the reconciler of a term: it reads the term's
// informers and writes through its client.
func newReconciler(t *manager.Term, opts Options) *Reconciler {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = DefaultProbeTimeout
	}
	if opts.Clients == nil {
		opts.Clients = NewClients()
	}
	if opts.Workers <= 0 {
		opts.Workers = 4
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Reconciler{c: t.Client, opts: opts,
		targets: t.Informers.For(api.KindTarget), secrets: t.Informers.For(api.KindSecret)}
}

// indexSecret indexes a kubernetes-cluster Target by its Secret's key.
func indexSecret(obj *api.Object) []string {
	var spec api.TargetSpec
	if raw := obj.Field(api.FieldSpec); len(raw) == 0 || json.Unmarshal(raw, &spec) != nil || spec.Type != api.TargetTypeKubernetesCluster {
		return nil
	}
	ref, err := SecretRef(spec.Config)
	if err != nil {
		return nil
	}
	return []string{api.Key(obj.Namespace, ref.Name)}
}

// Reconcile checks the Target key ("ns/name"): it connects to its cluster
// with the kubeconfig of its Secret and records the outcome in its
// Reachable condition. Targets of other types are left alone.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name := api.SplitKey(key)
	obj, ok := r.targets.Get(ns, name)
	if !ok {
		r.opts.Clients.Drop(key)
		r.written.Forget(key)
		trace.Exit(ctx, "the target is gone: dropped its client")
		return controller.Result{}, nil
	}
	if r.written.Stale(key, obj.ResourceVersion) {
		trace.Exit(ctx, "cache behind this controller's last write: waiting for its watch event")
		return controller.Result{}, nil
	}
	t, err := controller.Decode[*api.Target](obj)
	if err != nil {
		return controller.Result{}, controller.Terminal(fmt.Errorf("target: %w", err))
	}
	if t.Spec.Type != api.TargetTypeKubernetesCluster {
		r.opts.Clients.Drop(key)
		trace.Exit(ctx, "type %s: not checked by cairn", t.Spec.Type)
		return controller.Result{}, nil
	}
	if t.Deleting() {
		r.opts.Clients.Drop(key)
		trace.Exit(ctx, "the target is being deleted: dropped its client")
		return controller.Result{}, nil
	}
	p, err := r.check(ctx, key, t)
	if err != nil {
		return controller.Result{}, err
	}
	st, changed := Next(t.Status, t.Generation, p, r.opts.Now())
	if changed {
		if err := r.writeStatus(ctx, key, t, st); err != nil {
			return controller.Result{}, err
		}
		trace.Action(ctx, "wrote Reachable=%s (%s)", st.Conditions[len(st.Conditions)-1].Status, p.Reason)
	}
	trace.Exit(ctx, "Reachable=%t (%s): %s; next check in %s", p.Reachable, p.Reason, p.Message, r.opts.Interval)
	return controller.Result{RequeueAfter: r.opts.Interval}, nil
}

// check reads the Target's Secret, takes its client and asks the cluster
// for its version. The error is one of the API's, reading the Secret
// (retried).
func (r *Reconciler) check(ctx context.Context, key string, t *api.Target) (Probe, error) {
	ref, err := SecretRef(t.Spec.Config)
	if err != nil {
		r.opts.Clients.Drop(key)
		return Probe{Reason: ReasonInvalidConfig, Message: err.Error()}, nil
	}
	sec, err := r.secret(ctx, t, ref.Name)
	if api.IsCreatorForbidden(err) {
		r.opts.Clients.Drop(key)
		return Probe{Reason: ReasonForbidden, Message: err.Error()}, nil
	}
	if err != nil {
		return Probe{}, err
	}
	step := Plan(ref, sec)
	if !step.Connect {
		r.opts.Clients.Drop(key)
		trace.Check(ctx, "kubeconfig: %s", step.Fail.Message)
		return step.Fail, nil
	}
	trace.Check(ctx, "kubeconfig: Secret %s key %s (resourceVersion %s)", ref.Name, ref.Key, sec.ResourceVersion)
	cl, err := r.opts.Clients.Get(key, step.Source)
	if err != nil {
		reason := ReasonInvalidKubeconfig
		if errors.Is(err, ErrKubeconfigRefused) {
			reason = ReasonKubeconfigRefused
		}
		return Probe{Reason: reason, Message: fmt.Sprintf("Secret %s key %s: %s", ref.Name, ref.Key, err)}, nil
	}
	p := ServerVersion(ctx, cl, r.opts.ProbeTimeout)
	if p.Reachable {
		trace.Check(ctx, "server version: %s", p.Version)
	} else {
		trace.Check(ctx, "server version not read: %s", p.Message)
	}
	return p, nil
}

// secret reads the Secret name of t's namespace through the API, as t's
// creator: the controller lends no authority of its own (the shared cache
// of Secrets only tells it when to look again). A missing Secret is
// Secret{Found: false}; the error is the API's (api.IsCreatorForbidden
// when the creator may not read it).
func (r *Reconciler) secret(ctx context.Context, t *api.Target, name string) (Secret, error) {
	obj, err := r.c.Get(api.ActFor(ctx, api.KindTarget, &t.ObjectMeta), api.KindSecret, t.Namespace, name)
	if errors.Is(err, api.ErrNotFound) {
		return Secret{}, nil
	}
	if err != nil {
		return Secret{}, fmt.Errorf("target: read Secret %s: %w", name, err)
	}
	s, err := client.Convert[*api.Secret](obj)
	if err != nil {
		return Secret{}, fmt.Errorf("target: Secret %s does not decode", name)
	}
	return Secret{Found: true, UID: s.UID, ResourceVersion: s.ResourceVersion, Data: s.Data}, nil
}

// writeStatus writes st as t's status (a compare-and-swap on t's
// resourceVersion) and remembers the write.
func (r *Reconciler) writeStatus(ctx context.Context, key string, t *api.Target, st api.TargetStatus) error {
	obj, err := controller.StatusUpdate(t, st)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	out, err := r.c.UpdateStatus(ctx, obj)
	if err != nil {
		return fmt.Errorf("target: write the status of %s: %w", key, err)
	}
	r.written.Wrote(key, out.ResourceVersion)
	return nil
}
